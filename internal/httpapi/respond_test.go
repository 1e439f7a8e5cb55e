package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/trackergateway/gateway/internal/failure"
	"github.com/trackergateway/gateway/internal/store"
)

// A store error reaches the caller through the one table, wrapped however
// deep; only a 500 is logged as an error, with a generic body.
func TestWriteErrorTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"not found", fmt.Errorf("get task: %w", store.ErrNotFound), http.StatusNotFound, "not found"},
		{"constraint", fmt.Errorf("create workspace: %w", store.ErrConstraint), http.StatusConflict, "conflicts with the stored data"},
		{"external id taken", fmt.Errorf("insert task: %w", store.ErrExternalIDTaken), http.StatusConflict, "external_id is taken"},
		{"invalid text", fmt.Errorf("insert: %w", store.ErrInvalidText), http.StatusBadRequest, "text must be valid UTF-8 without NUL characters"},
		{"unavailable", fmt.Errorf("get task: %w", store.ErrUnavailable), http.StatusServiceUnavailable, "storage unavailable"},
		{"unavailable wins", errors.Join(store.ErrNotFound, store.ErrUnavailable), http.StatusServiceUnavailable, "storage unavailable"},
		{"coded error kept", failure.Wrap(failure.Conflict, store.ErrNotFound, "step is running"), http.StatusConflict, "step is running"},
		{"plain error", errors.New("disk on fire"), http.StatusInternalServerError, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			WriteError(rec, httptest.NewRequest(http.MethodGet, "/", nil), slog.New(slog.NewTextHandler(&logs, nil)), tt.err)
			if want := `{"error":"` + tt.message + `"}` + "\n"; rec.Code != tt.status || rec.Body.String() != want {
				t.Errorf("WriteError(%v) = %d %s, want %d %s", tt.err, rec.Code, rec.Body, tt.status, want)
			}
			if logged := strings.Contains(logs.String(), "level=ERROR"); logged != (tt.status == http.StatusInternalServerError) {
				t.Errorf("WriteError(%v) logged %q", tt.err, logs.String())
			}
		})
	}
}

func TestReword(t *testing.T) {
	t.Parallel()
	taskNotFound := failure.New(failure.NotFound, "task not found")
	coded := failure.New(failure.Invalid, "external_id is required")
	tests := []struct {
		name string
		err  error
		want error // nil: the error is reworded as taskNotFound
	}{
		{"not found", fmt.Errorf("get task: %w", store.ErrNotFound), nil},
		{"another code", fmt.Errorf("get task: %w", store.ErrUnavailable), fmt.Errorf("get task: %w", store.ErrUnavailable)},
		{"coded error", coded, coded},
		{"plain error", errors.New("boom"), errors.New("boom")},
	}
	for _, tt := range tests {
		got := Reword(tt.err, taskNotFound)
		if tt.want == nil {
			if failure.CodeOf(got) != failure.NotFound || failure.MessageOf(got) != "task not found" || !errors.Is(got, store.ErrNotFound) {
				t.Errorf("%s: Reword = %v, want task not found wrapping the cause", tt.name, got)
			}
			continue
		}
		if got.Error() != tt.want.Error() || failure.CodeOf(got) != failure.CodeOf(tt.want) {
			t.Errorf("%s: Reword = %v, want it unchanged", tt.name, got)
		}
	}
	if Reword(nil, taskNotFound) != nil {
		t.Error("Reword(nil) is not nil")
	}
}
