package ingest

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/linear"
	"github.com/trackergateway/gateway/internal/config"
	"github.com/trackergateway/gateway/internal/inbox"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// linearDelivery is the inbox row of a Linear fixture received by conn,
// after mutate.
func (e *env) linearDelivery(connID, name string, mutate ...func(map[string]any)) store.Delivery {
	e.t.Helper()
	body := fixture(e.t, connectors.ProviderLinear, name)
	for _, m := range mutate {
		m(body)
	}
	raw := mustJSON(e.t, body)
	h := http.Header{}
	h.Set(linear.HeaderEvent, body["type"].(string))
	headers, err := inbox.EncodeHeaders(h, linear.Adapter{}.SecretHeaders())
	if err != nil {
		e.t.Fatal(err)
	}
	return store.Delivery{ID: uuid.NewString(), ConnectionID: connID, Provider: connectors.ProviderLinear,
		Event: body["type"].(string), DeliveryKey: uuid.NewString(), Headers: headers, Body: raw,
		Status: store.DeliveryProcessing, Attempts: 1, ReceivedAt: e.clock.Now()}
}

// Two Linear organisations' connections in one workspace keep their
// links apart: the second one's removal of an attachment with the same ID
// leaves the first one's link as it was.
func TestLinksOfTwoConnectionsStayApart(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		t.Parallel()
		linearConn := func(id, host string) config.Connection {
			c := githubConn()
			c.ID, c.Provider, c.Host = id, connectors.ProviderLinear, host
			return c
		}
		e := newEnv(t, st, linearConn("ln-acme", "acme"), linearConn("ln-beta", "beta"))
		e.app.adapters[connectors.ProviderLinear] = linear.Adapter{}
		const acmeIssue = "linear:acme:issue:539068e2-ae88-4d09-bd75-22eb4a59612f"
		if out := e.process(e.linearDelivery("ln-acme", "attachment.create.json")); out.Action != "link" {
			t.Fatalf("acme's attachment: %+v, want a link", out)
		}
		// beta reuses the attachment ID, on one of its own issues.
		removed := e.process(e.linearDelivery("ln-beta", "attachment.remove.json",
			set("0f1e2d3c-4b5a-4968-8776-655443322110", "data", "issueId")))
		if removed.Action != "unlink" {
			t.Fatalf("beta's removal: %+v, want an unlink", removed)
		}
		links, err := st.ContributionLinksFrom(context.Background(), testWorkspace, acmeIssue)
		if err != nil {
			t.Fatal(err)
		}
		if len(links) != 1 || links[0].ConnectionID != "ln-acme" || links[0].Number != 2 {
			t.Errorf("acme's issue's links = %+v, want its pull request #2, recorded by ln-acme", links)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
