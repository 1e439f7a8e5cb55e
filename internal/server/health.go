package server

import (
	"net/http"

	"github.com/trackergateway/gateway/internal/httpapi"
	"github.com/trackergateway/gateway/internal/inbox"
)

// healthz answers while the process serves HTTP.
func healthz(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 while the gateway can make deliveries durable, else
// 503 with the reason (inbox.Readiness).
func readyz(readiness *inbox.Readiness) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := readiness.Check(r.Context()); err != nil {
			httpapi.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

// redirectTo answers with a redirect to path: code is
// http.StatusMovedPermanently for a path that is only another spelling of
// path, http.StatusFound where a browser should not remember it.
func redirectTo(path string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, path, code)
	}
}
