package console

import (
	"net/http"
	"net/url"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/store"
)

// suppressionsShown is the size of a page of suppressions.
const suppressionsShown = 50

type suppressionsPage struct {
	WorkspaceID  string
	Suppressions []store.Suppression
	Next         url.Values
}

// Suppressions lists suppressions (of one workspace when the form names
// it), each with a button clearing it.
func (c *Console) Suppressions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ws, err := httpapi.QueryText(q, "workspace_id")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	list, next, err := c.d.Suppressions.List(r.Context(), ws, suppressionsShown, q.Get("cursor"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	page := suppressionsPage{WorkspaceID: ws, Suppressions: list}
	if next != "" {
		page.Next = url.Values{"cursor": {next}}
		if ws != "" {
			page.Next.Set("workspace_id", ws)
		}
	}
	c.render(w, r, http.StatusOK, "suppressions", "Suppressions", page)
}

// ClearSuppression clears one suppression (form: workspace_id,
// external_id), so the next delivery for its entity is processed.
func (c *Console) ClearSuppression(w http.ResponseWriter, r *http.Request) {
	ws, err := httpapi.QueryText(r.PostForm, "workspace_id")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	ext, err := httpapi.QueryText(r.PostForm, "external_id")
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if err := c.d.Suppressions.Clear(r.Context(), ws, ext); err != nil {
		c.fail(w, r, err)
		return
	}
	seeOther(w, r, "/ui/suppressions", url.Values{"notice": {"Cleared the suppression of " + ext + " in " + ws + "."}})
}
