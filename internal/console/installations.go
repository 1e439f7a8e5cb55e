package console

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/store"
)

type installationsPage struct {
	ConnectionID  string
	Installations []store.Installation
}

// ConnectionInstallations shows the GitHub App installations the
// connection {id}'s deliveries recorded; an unknown connection is a 404.
func (c *Console) ConnectionInstallations(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["id"]
	list, err := c.d.Installations.List(r.Context(), id)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "installations", "Installations of "+id, installationsPage{ConnectionID: id, Installations: list})
}
