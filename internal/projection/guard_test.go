package projection

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trackergateway/gateway/internal/providerapi"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// A provider API that redirects a refresh to another host never gets the
// token there: the refresh fails with the redirect refused, recorded on
// the row, and the other host gets no request.
func TestRefreshRefusesRedirectsToAnotherHost(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			var trapped, withToken atomic.Int32
			trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				trapped.Add(1)
				if r.Header.Get("Authorization") != "" || r.Header.Get("Private-Token") != "" {
					withToken.Add(1)
				}
				_, _ = io.WriteString(w, x.answer(t))
			}))
			t.Cleanup(trap.Close)
			e := newEnv(t, storetest.Open(t, store.DialectSQLite))
			task := e.createTask(x.c, x.conn)
			e.upsert(payloadRow(x.c, task.ID, x.conn))
			// 127.0.0.1 and localhost: one machine, two hosts.
			other := strings.Replace(trap.URL, "127.0.0.1", "localhost", 1)
			e.api.script(x.c.path, reply{status: http.StatusTemporaryRedirect, header: map[string]string{"Location": other + x.c.path}})
			e.runOnce()
			row := e.row(task.ID)
			if !strings.Contains(row.SyncError, "refused") || row.LastSyncedAt != nil {
				t.Errorf("row synced %v, sync_error %q; want the redirect refused", row.LastSyncedAt, row.SyncError)
			}
			if n, tok := trapped.Load(), withToken.Load(); n != 0 || tok != 0 {
				t.Errorf("the other host got %d requests, %d with the token; want none", n, tok)
			}
		})
	}
}

// An answer past the body limit fails the refresh once the limit is
// read; the row keeps what it had.
func TestRefreshRefusesAHugeAnswer(t *testing.T) {
	t.Parallel()
	for _, x := range expectations {
		t.Run(x.c.provider, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, storetest.Open(t, store.DialectSQLite))
			task := e.createTask(x.c, x.conn)
			e.upsert(payloadRow(x.c, task.ID, x.conn))
			// A JSON object padded past the limit: it would decode whole.
			huge := `{"title": "huge"` + strings.Repeat(" ", providerapi.MaxResponseBody+1<<20) + `}`
			e.api.script(x.c.path, ok(huge))
			e.runOnce()
			row := e.row(task.ID)
			if !strings.Contains(row.SyncError, "larger than") || row.Title == "huge" || row.LastSyncedAt != nil {
				t.Errorf("row title %q, synced %v, sync_error %q; want the answer refused as too large", row.Title, row.LastSyncedAt, row.SyncError)
			}
		})
	}
}
