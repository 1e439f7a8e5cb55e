package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trackergateway/gateway/internal/events"
)

// TestRoutesNameTheirSurfaceAsTheCause: the task events a request makes
// name the surface it came through: the API's routes "api", the console's
// "operator"; the webhook receiver and /mcp name none here (a delivery
// names itself when it is processed, the agent tools set "mcp").
func TestRoutesNameTheirSurfaceAsTheCause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want events.Cause
	}{
		{"/api/v1/tasks/{id}", events.Cause{Actor: events.ActorAPI}},
		{"/api/v1/workspaces/{id}/events", events.Cause{Actor: events.ActorAPI}},
		{"/ui/", events.Cause{Actor: events.ActorOperator}},
		{"/ui/tasks/{id}", events.Cause{Actor: events.ActorOperator}},
		{"/ui", events.Cause{Actor: events.ActorOperator}},
		{"/webhooks/{connection}", events.Cause{}},
		{"/mcp", events.Cause{}},
		{"/healthz", events.Cause{}},
	}
	for _, tt := range tests {
		var got events.Cause
		h := withCause(tt.path, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			got = events.CauseFrom(r.Context())
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if got != tt.want {
			t.Errorf("%s: cause %+v, want %+v", tt.path, got, tt.want)
		}
	}
}
