package httpapi

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/internal/failure"
)

// HandleRoutingErrors makes root answer an unknown path with a JSON 404
// {"error":"not found"} and a known path with a method it does not serve
// with a JSON 405 {"error":"method not allowed"} and an Allow header,
// instead of gorilla/mux's plain text. Set on the root router only: a
// subrouter's miss falls through to the root, which answers for the whole
// tree.
//
// Both cases run the same check, the routes that match but for the method:
// mux does not always report a method mismatch inside a subrouter (a
// sibling subrouter's route that shares the parent's matcher clears it), so
// its "not found" alone cannot be trusted.
func HandleRoutingErrors(root *mux.Router) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := allowedMethods(root, r)
		if len(allow) == 0 {
			// A 404 is never logged: the logger is unused.
			WriteError(w, r, slog.New(slog.DiscardHandler), failure.New(failure.NotFound, "not found"))
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		// A routing answer, not an application error: no failure code.
		WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method not allowed"})
	})
	root.NotFoundHandler = h
	root.MethodNotAllowedHandler = h
}

// allowedMethods returns, sorted, the methods of the routes of root's tree
// that match r but for its method. Each route is matched on its own
// matchers (path, host, queries, and those it copied from its subrouter's
// parent route).
func allowedMethods(root *mux.Router, r *http.Request) []string {
	var allow []string
	_ = root.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		methods, err := route.GetMethods()
		if err != nil {
			return nil // no method matcher: a subrouter's route
		}
		for _, m := range methods {
			if slices.Contains(allow, m) {
				continue
			}
			probe := r.Clone(r.Context())
			probe.Method = m
			if route.Match(probe, &mux.RouteMatch{}) {
				allow = append(allow, m)
			}
		}
		return nil
	})
	slices.Sort(allow)
	return allow
}
