package main

// The OpenAPI document (docs/openapi.yaml) against the real server: every
// response of a realistic flow is validated against its operation, every
// route of the router is documented, and every documented operation is
// routed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/docs"
	"github.com/trackergateway/gateway/internal/idempotency"
	"github.com/trackergateway/gateway/internal/openapitest"
	"github.com/trackergateway/gateway/internal/server"
	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/postgres"
	"github.com/trackergateway/gateway/internal/store/sqlite"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/tasks"
)

// isConsolePath reports whether path belongs to the operator console
// (/ui and below, and the root, which redirects to it): HTML pages and form
// posts for people, not operations of the JSON API, so docs/openapi.yaml
// does not describe them.
func isConsolePath(path string) bool {
	return path == "/" || path == "/ui" || strings.HasPrefix(path, "/ui/")
}

// registeredRoutes walks the router the gateway serves
// (server.NewRouter, built here without handlers to call) and returns its
// routes as "METHOD /template", sorted, the console's left out
// (isConsolePath).
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	var out []string
	err := server.NewRouter(server.Deps{}).Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return err
		}
		methods, err := route.GetMethods()
		if err != nil {
			return fmt.Errorf("route %s has no methods: %w", path, err)
		}
		if isConsolePath(path) {
			return nil
		}
		for _, m := range methods {
			out = append(out, m+" "+path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the router: %v", err)
	}
	slices.Sort(out)
	return out
}

// documentPath is the route that serves the document; its mounting is
// wiring outside this test, so while it answers 404 it is only logged.
const documentPath = "/api/v1/openapi.yaml"

// specAnswer is one request and its response.
type specAnswer struct {
	status int
	header http.Header
	body   []byte
}

// specClient sends requests to g and validates every response against the
// operation it reached.
type specClient struct {
	t *testing.T
	g *gateway
}

// call sends method path with the admin token and a JSON body (when not
// nil), validates the response, and fails unless its status is one of want.
func (c specClient) call(method, path string, body any, want ...int) specAnswer {
	c.t.Helper()
	var raw []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		raw = b
	}
	h := http.Header{"Authorization": {"Bearer " + testAdminToken}}
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	return c.raw(method, path, h, raw, want...)
}

// raw sends the request as given, validates the response and checks its
// status against want.
func (c specClient) raw(method, path string, h http.Header, body []byte, want ...int) specAnswer {
	c.t.Helper()
	got := c.send(method, path, h, body)
	openapitest.ValidateResponse(c.t, method, path, got.status, got.header, got.body)
	if len(want) > 0 && !slices.Contains(want, got.status) {
		c.t.Fatalf("%s %s = %d %s, want %v", method, path, got.status, got.body, want)
	}
	return got
}

func (c specClient) send(method, path string, h http.Header, body []byte) specAnswer {
	c.t.Helper()
	req, err := http.NewRequest(method, c.g.URL+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = h.Clone()
	resp, err := c.g.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return specAnswer{status: resp.StatusCode, header: resp.Header, body: out}
}

// webhook posts a signed delivery and validates the answer.
func (c specClient) webhook(h hook, want ...int) specAnswer {
	c.t.Helper()
	hd := h.header(secretsByConn[h.Conn])
	hd.Set("Content-Type", "application/json")
	return c.raw(http.MethodPost, "/webhooks/"+h.Conn, hd, h.Body, want...)
}

// finalDelivery polls GET /api/v1/deliveries/{id}, validating each answer,
// until the delivery is final.
func (c specClient) finalDelivery(id string) delivery {
	c.t.Helper()
	var d delivery
	poll(c.t, "delivery "+id+" to be final", waitTimeout, func() bool {
		got := c.call(http.MethodGet, "/api/v1/deliveries/"+id, nil, http.StatusOK)
		decode(c.t, got.body, &d)
		return finalStatus(d.Status)
	})
	return d
}

func decode(t *testing.T, b []byte, out any) {
	t.Helper()
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// openTestStore opens a second handle on the gateway's database, for the
// states the HTTP API cannot reach on its own (a creation in flight).
func openTestStore(t *testing.T, dbURL string) *sqlstore.Store {
	t.Helper()
	ctx := context.Background()
	var st *sqlstore.Store
	if path, ok := strings.CutPrefix(dbURL, "sqlite:"); ok {
		d, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		st = sqlstore.New(d)
	} else {
		d, err := postgres.Open(ctx, dbURL, postgres.Options{}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		st = sqlstore.New(d)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

type createAnswer struct {
	task
	Deduplicated     *bool `json:"deduplicated"`
	CreationComplete *bool `json:"creation_complete"`
}

func (c specClient) create(body map[string]any, wantDedup, wantComplete bool, wantExternalID string) createAnswer {
	c.t.Helper()
	got := c.call(http.MethodPost, "/api/v1/tasks", body, http.StatusOK)
	var a createAnswer
	decode(c.t, got.body, &a)
	if a.Deduplicated == nil || *a.Deduplicated != wantDedup || a.CreationComplete == nil || *a.CreationComplete != wantComplete ||
		a.ExternalID != wantExternalID {
		c.t.Errorf("POST /api/v1/tasks %v = %s, want deduplicated %t, creation_complete %t, external_id %q",
			body, got.body, wantDedup, wantComplete, wantExternalID)
	}
	return a
}

func TestOpenAPIResponses(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		c := specClient{t: t, g: g}
		ws := "/api/v1/workspaces/" + testWorkspace

		// Health.
		c.call(http.MethodGet, "/healthz", nil, http.StatusOK)
		c.call(http.MethodGet, "/readyz", nil, http.StatusOK)
		c.call(http.MethodGet, "/metrics", nil, http.StatusOK)

		// A webhook subscription, owed every event from here on. Its URL is
		// a loopback address, which this gateway (outbound.allow_private
		// off) refuses to connect to: its deliveries fail, nothing is sent.
		subs := ws + "/subscriptions"
		var sub struct {
			ID string `json:"id"`
		}
		decode(t, c.call(http.MethodPost, subs, map[string]any{"url": "https://127.0.0.1:9/hook", "description": "openapi"},
			http.StatusCreated).body, &sub)
		c.call(http.MethodPost, subs, map[string]any{"url": "https://u:p@example.com/"}, http.StatusBadRequest)
		c.call(http.MethodPost, "/api/v1/workspaces/nope/subscriptions", map[string]any{"url": "https://127.0.0.1:9/"}, http.StatusNotFound)

		// A webhook becomes a task; its redelivery is a duplicate.
		opened := fixtureHook(t, "github/issues.opened.json").withKey("openapi-opened")
		var rc receipt
		decode(t, c.webhook(opened, http.StatusAccepted).body, &rc)
		if dup := c.webhook(opened, http.StatusAccepted); !strings.Contains(string(dup.body), `"duplicate"`) {
			t.Errorf("redelivery = %s, want status duplicate", dup.body)
		}
		issue := c.finalDelivery(rc.DeliveryID)
		if issue.Status != "succeeded" || issue.taskID() == "" {
			t.Fatalf("delivery = %+v, want succeeded with a task", issue)
		}
		// GitHub's form-encoded delivery: the JSON in the payload field,
		// signed over the raw form.
		form := opened.withKey("openapi-form")
		form.Body = []byte("payload=" + url.QueryEscape(string(githubIssueOpened(t, 9002, 9002, "Sent as a form"))))
		formHeader := form.header(githubSecret)
		formHeader.Set("Content-Type", "application/x-www-form-urlencoded")
		c.raw(http.MethodPost, "/webhooks/github", formHeader, form.Body, http.StatusAccepted)
		// Webhook refusals.
		bad := opened
		badHeader := bad.header("not-the-secret")
		badHeader.Set("Content-Type", "application/json")
		c.raw(http.MethodPost, "/webhooks/github", badHeader, bad.Body, http.StatusUnauthorized)
		c.raw(http.MethodPost, "/webhooks/nope", http.Header{"Content-Type": {"application/json"}}, []byte(`{}`), http.StatusNotFound)
		c.raw(http.MethodPost, "/webhooks/github", http.Header{"Content-Type": {"text/plain"}}, []byte(`{}`), http.StatusUnsupportedMediaType)
		c.webhook(opened.withKey(strings.Repeat("k", 600)), http.StatusBadRequest) // a delivery key past 512 bytes

		// A pull request creates its own task through a creation step, with
		// a projection.
		pr := c.webhook(fixtureHook(t, "github/pull_request.opened.json").withKey("openapi-pr"), http.StatusAccepted)
		decode(t, pr.body, &rc)
		prDelivery := c.finalDelivery(rc.DeliveryID)
		if prDelivery.taskID() == "" {
			t.Fatalf("pull request delivery = %+v, want a task", prDelivery)
		}
		var contribs struct {
			Contributions []contribution `json:"contributions"`
		}
		decode(t, c.call(http.MethodGet, "/api/v1/tasks/"+prDelivery.taskID()+"/contributions", nil, http.StatusOK).body, &contribs)
		if len(contribs.Contributions) == 0 {
			t.Errorf("contributions of the pull request's task: none, want its projection")
		}
		c.call(http.MethodGet, "/api/v1/tasks/"+issue.taskID()+"/contributions", nil, http.StatusOK)

		st := openTestStore(t, g.DBURL)
		ctx := context.Background()
		prTask, err := st.GetTask(ctx, prDelivery.taskID())
		if err != nil {
			t.Fatal(err)
		}
		c.call(http.MethodGet, "/api/v1/creations/"+prTask.CreationOperationID, nil, http.StatusOK)

		// REST creates: created, found settled, created without an identity.
		body := map[string]any{"workspace_id": testWorkspace, "title": "From the API", "external_id": "openapi-1",
			"labels": []string{"api"}}
		created := c.create(body, false, true, "openapi-1")
		c.create(body, true, true, "openapi-1")
		c.create(map[string]any{"workspace_id": testWorkspace, "title": "No identity"}, false, true, "")
		c.call(http.MethodPost, "/api/v1/tasks", map[string]any{"workspace_id": testWorkspace}, http.StatusBadRequest)
		c.call(http.MethodPost, "/api/v1/tasks", map[string]any{"workspace_id": "nope", "title": "x"}, http.StatusNotFound)
		tooBig := []byte(`{"workspace_id":"` + testWorkspace + `","title":"` + strings.Repeat("a", 1<<20) + `"}`)
		c.raw(http.MethodPost, "/api/v1/tasks", http.Header{"Authorization": {"Bearer " + testAdminToken},
			"Content-Type": {"application/json"}}, tooBig, http.StatusRequestEntityTooLarge)

		// Found unsettled and created, identity lost: a creation held open
		// in this process (as a connector's would be) while the API looks
		// it up, creates against it and releases its identity.
		coord := idempotency.New(st, slog.New(slog.DiscardHandler), time.Now, providers.ContributionKinds())
		begun, err := coord.BeginTaskCreation(ctx, idempotency.CreateRequest{WorkspaceID: testWorkspace, ExternalID: "openapi-in-flight",
			Title: "In flight", WorkflowStepID: "backlog", Actor: idempotency.Actor{Kind: "api_token", ID: "openapi-test", AuthMode: "bearer"}})
		if err != nil || begun.Handle == nil {
			t.Fatalf("BeginTaskCreation = %+v, %v; want a handle", begun, err)
		}
		opPath := "/api/v1/creations/" + begun.Handle.OperationID
		c.call(http.MethodGet, opPath, nil, http.StatusOK)
		c.create(map[string]any{"workspace_id": testWorkspace, "title": "Again", "external_id": "openapi-in-flight"}, true, false, "openapi-in-flight")
		lookup := c.call(http.MethodGet, ws+"/tasks/by-external-id?external_id=openapi-in-flight", nil, http.StatusOK)
		if !strings.Contains(string(lookup.body), `"creation_complete":false`) {
			t.Errorf("lookup of a creation in flight = %s, want creation_complete false", lookup.body)
		}
		c.call(http.MethodDelete, ws+"/tasks/by-external-id?external_id=openapi-in-flight", nil, http.StatusNoContent)
		done, err := coord.CompleteTaskCreation(ctx, begun.Handle)
		if err != nil || done.Outcome != idempotency.CreatedIdentityLost {
			t.Fatalf("CompleteTaskCreation = %v, %v; want created, identity lost", done.Outcome, err)
		}
		// The answer the API gives this outcome, from its own encoder.
		lost, err := json.Marshal(tasks.CreateResponse(done.Task, done.Outcome))
		if err != nil {
			t.Fatal(err)
		}
		openapitest.ValidateSchema(t, "TaskCreated", lost)
		if strings.Contains(string(lost), "external_id") {
			t.Errorf("created, identity lost = %s, want no external_id", lost)
		}
		c.call(http.MethodGet, opPath, nil, http.StatusOK)
		resolve := map[string]any{"kind": "remote_contribution_associate", "step_key": "github:github:pull_request:1", "effect": "present_exact"}
		c.call(http.MethodPost, opPath+"/steps/resolve", resolve, http.StatusConflict)
		c.call(http.MethodPost, opPath+"/steps/resolve", map[string]any{"kind": "other", "step_key": "k", "effect": "present_exact"},
			http.StatusBadRequest)
		c.call(http.MethodPost, "/api/v1/creations/00000000-0000-4000-8000-000000000000/steps/resolve", resolve, http.StatusNotFound)
		c.call(http.MethodGet, "/api/v1/creations/00000000-0000-4000-8000-000000000000", nil, http.StatusNotFound)

		resolveUnknownStep(t, c, st, created.ID)

		// Reads and updates.
		c.call(http.MethodGet, "/api/v1/tasks/"+created.ID, nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/tasks/"+issue.taskID(), nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/tasks/00000000-0000-4000-8000-000000000000", nil, http.StatusNotFound)
		c.call(http.MethodPatch, "/api/v1/tasks/"+created.ID, map[string]any{"title": "Renamed", "workflow_step_id": "doing"}, http.StatusOK)
		c.call(http.MethodPatch, "/api/v1/tasks/"+created.ID, map[string]any{"external_id": "other"}, http.StatusBadRequest)
		c.call(http.MethodPatch, "/api/v1/tasks/"+created.ID, map[string]any{"workflow_step_id": "nope"}, http.StatusBadRequest)
		archived := c.call(http.MethodPatch, "/api/v1/tasks/"+created.ID, map[string]any{"archived": true}, http.StatusOK)
		if strings.Contains(string(archived.body), `"archived_at":null`) {
			t.Errorf("archived task = %s, want archived_at set", archived.body)
		}

		// Lists, with a cursor.
		var page struct {
			NextCursor string `json:"next_cursor"`
		}
		decode(t, c.call(http.MethodGet, ws+"/tasks?limit=1", nil, http.StatusOK).body, &page)
		if page.NextCursor == "" {
			t.Fatal("first page of one task has no next_cursor")
		}
		c.call(http.MethodGet, ws+"/tasks?limit=1000&include_archived=true&cursor="+url.QueryEscape(page.NextCursor), nil, http.StatusOK)
		c.call(http.MethodGet, ws+"/tasks?cursor=garbage", nil, http.StatusBadRequest)
		c.call(http.MethodGet, ws+"/tasks?limit=0", nil, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/workspaces/nope/tasks", nil, http.StatusNotFound)

		// Lookup and release.
		c.call(http.MethodGet, ws+"/tasks/by-external-id?external_id=openapi-1", nil, http.StatusOK)
		c.call(http.MethodGet, ws+"/tasks/by-external-id", nil, http.StatusBadRequest)
		c.call(http.MethodGet, ws+"/tasks/by-external-id?external_id=never", nil, http.StatusNotFound)
		c.call(http.MethodDelete, ws+"/tasks/by-external-id?external_id=openapi-1", nil, http.StatusNoContent)
		c.call(http.MethodDelete, ws+"/tasks/by-external-id?external_id=openapi-1", nil, http.StatusNotFound)

		// Deleting a connector's task leaves a suppression.
		c.call(http.MethodDelete, "/api/v1/tasks/"+issue.taskID(), nil, http.StatusNoContent)
		c.call(http.MethodDelete, "/api/v1/tasks/"+issue.taskID(), nil, http.StatusNotFound)
		var sups struct {
			Suppressions []suppression `json:"suppressions"`
		}
		decode(t, c.call(http.MethodGet, "/api/v1/suppressions?workspace_id="+testWorkspace, nil, http.StatusOK).body, &sups)
		if len(sups.Suppressions) != 1 {
			t.Fatalf("suppressions = %+v, want the deleted issue's", sups.Suppressions)
		}
		c.call(http.MethodGet, "/api/v1/suppressions?limit=1", nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/suppressions?cursor=garbage", nil, http.StatusBadRequest)
		clear := "/api/v1/suppressions?workspace_id=" + testWorkspace + "&external_id=" + url.QueryEscape(sups.Suppressions[0].ExternalID)
		c.call(http.MethodDelete, clear, nil, http.StatusNoContent)
		c.call(http.MethodDelete, clear, nil, http.StatusNotFound)
		c.call(http.MethodDelete, "/api/v1/suppressions?workspace_id="+testWorkspace, nil, http.StatusBadRequest)

		// Deliveries.
		decode(t, c.call(http.MethodGet, "/api/v1/deliveries?limit=1", nil, http.StatusOK).body, &page)
		if page.NextCursor == "" {
			t.Fatal("first page of one delivery has no next_cursor")
		}
		c.call(http.MethodGet, "/api/v1/deliveries?status=succeeded&connection=github&cursor="+url.QueryEscape(page.NextCursor), nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/deliveries?status=bogus", nil, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/deliveries?event=issues&received_after=2020-01-02T03:04:05Z&received_before=2999-01-01T00:00:00%2B02:00&error_contains=x&external_id=y", nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/deliveries?received_after=yesterday", nil, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/deliveries?bogus=1", nil, http.StatusBadRequest)
		// Bulk replay: a dry run matching every delivery, then a replay of
		// none (an unknown connection), and the 400s.
		c.call(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"received_after": "2020-01-02T03:04:05Z", "dry_run": true, "max": 5}, http.StatusOK)
		c.call(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"connection": "nope"}, http.StatusOK)
		c.call(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"dry_run": true}, http.StatusBadRequest)
		c.call(http.MethodPost, "/api/v1/deliveries/replay", map[string]any{"status": "failed", "max": 0}, http.StatusBadRequest)
		c.call(http.MethodGet, "/api/v1/deliveries/00000000-0000-4000-8000-000000000000", nil, http.StatusNotFound)
		c.call(http.MethodPost, "/api/v1/deliveries/"+issue.ID+"/replay", nil, http.StatusAccepted)
		// Replayed again at once: 409 while it is queued or processing, 202
		// if a worker already finished it.
		c.call(http.MethodPost, "/api/v1/deliveries/"+issue.ID+"/replay", nil, http.StatusAccepted, http.StatusConflict)
		// Its suppression cleared, the issue's task is created again.
		if replayed := c.finalDelivery(issue.ID); replayed.Status != "succeeded" || replayed.action() != "create" {
			t.Errorf("replayed delivery = %s %s, want succeeded create", replayed.Status, replayed.action())
		}

		// GitHub App installations at the repository-hook connection (not
		// recorded: it is no App's; installations_test.go reads an App
		// connection's); an unknown connection.
		for _, f := range []string{"github/installation.created.json", "github/installation.suspend.json"} {
			var r receipt
			decode(t, c.webhook(fixtureHook(t, f), http.StatusAccepted).body, &r)
			c.finalDelivery(r.DeliveryID)
		}
		c.call(http.MethodGet, "/api/v1/connections/github/installations", nil, http.StatusOK)
		c.call(http.MethodGet, "/api/v1/connections/nope/installations", nil, http.StatusNotFound)

		// The subscription's deliveries (attempted and refused by now, or
		// still pending), changed, rotated, replayed and deleted.
		one := subs + "/" + sub.ID
		c.call(http.MethodGet, subs, nil, http.StatusOK)
		c.call(http.MethodGet, one, nil, http.StatusOK)
		c.call(http.MethodGet, subs+"/sub_nope", nil, http.StatusNotFound)
		poll(t, "a refused outbound attempt", waitTimeout, func() bool {
			got := c.call(http.MethodGet, one+"/deliveries?status=retrying&limit=1", nil, http.StatusOK)
			return strings.Contains(string(got.body), "loopback")
		})
		c.call(http.MethodGet, one+"/deliveries", nil, http.StatusOK)
		c.call(http.MethodGet, one+"/deliveries?status=bogus", nil, http.StatusBadRequest)
		c.call(http.MethodPatch, one, map[string]any{"enabled": false, "types": []string{"task.created", "task.deleted"}}, http.StatusOK)
		c.call(http.MethodPatch, one, map[string]any{"types": []string{"task.nope"}}, http.StatusBadRequest)
		c.call(http.MethodPost, one+"/rotate-secret", nil, http.StatusOK)
		c.call(http.MethodPost, one+"/replay", map[string]any{"since": "1h"}, http.StatusOK)
		c.call(http.MethodPost, one+"/replay", map[string]any{}, http.StatusBadRequest)
		c.call(http.MethodPost, one+"/replay", map[string]any{"event_id": "evt_7fffffffffffffff"}, http.StatusNotFound)
		c.call(http.MethodDelete, one, nil, http.StatusNoContent)
		c.call(http.MethodDelete, one, nil, http.StatusNotFound)

		// Workspaces.
		c.call(http.MethodGet, "/api/v1/workspaces", nil, http.StatusOK)
		newWS := map[string]any{"id": "openapi", "task_prefix": "OA", "steps": []map[string]any{{"id": "todo", "wip_limit": 2}, {"id": "done"}}}
		c.call(http.MethodPost, "/api/v1/workspaces", newWS, http.StatusCreated)
		c.call(http.MethodPost, "/api/v1/workspaces", newWS, http.StatusConflict)
		c.call(http.MethodPost, "/api/v1/workspaces", map[string]any{"id": "Not A Slug", "task_prefix": "X"}, http.StatusBadRequest)

		// Unknown routes and authentication. A routing answer belongs to no
		// operation: its body is checked against the error schema.
		for _, p := range []string{"/nope", "/api/v1/nope"} {
			got := c.send(http.MethodGet, p, http.Header{}, nil)
			if got.status != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404", p, got.status)
			}
			openapitest.ValidateSchema(t, "Error", got.body)
		}
		c.raw(http.MethodGet, "/api/v1/workspaces", http.Header{}, nil, http.StatusUnauthorized)
		// Failed authentications from one address are throttled: the last
		// thing this gateway is asked, since it then refuses this address's
		// failures.
		wrong := http.Header{"Authorization": {"Bearer not-a-token-of-this-gateway"}}
		for i := 0; ; i++ {
			got := c.raw(http.MethodGet, "/api/v1/workspaces", wrong, nil, http.StatusUnauthorized, http.StatusTooManyRequests)
			if got.status == http.StatusTooManyRequests {
				break
			}
			if i == 200 {
				t.Fatal("200 failed authentications were never throttled")
			}
		}
	})
}

// resolveUnknownStep drives a creation into the state an operator resolves
// and resolves it through the API: a creation of a pull request's task
// crashes after claiming its association step, while a row no recorded
// operation owns holds that pull request (tied to anchorTaskID); recovery
// turns the step unknown and leaves it there. The in-process coordinators
// run an hour (then two) ahead, so the gateway's own recoverer, which waits
// for operations idle 30s by the wall clock, leaves this one alone.
func resolveUnknownStep(t *testing.T, c specClient, st *sqlstore.Store, anchorTaskID string) {
	t.Helper()
	ctx := context.Background()
	discard := slog.New(slog.DiscardHandler)
	if _, err := st.InsertAssociation(ctx, store.Association{Provider: "github", ConnectionID: "github",
		ContributionID: "9001", ContributionKind: "pull_request", TaskID: anchorTaskID, WorkspaceID: testWorkspace,
		RepositoryID: "acme/app", OperationID: "44444444-4444-4444-8444-444444444444", IdempotencyKey: "k",
		OwnershipMarker: "m", ClaimedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	crashed := idempotency.New(st, discard, func() time.Time { return time.Now().Add(time.Hour) }, providers.ContributionKinds())
	simulated := errors.New("simulated crash")
	crashed.Failpoint = func(name string) error {
		if name == idempotency.FailAfterStepClaim {
			return simulated
		}
		return nil
	}
	_, err := crashed.Create(ctx, idempotency.CreateRequest{WorkspaceID: testWorkspace, Title: "Pull request 9001",
		WorkflowStepID: "backlog", Actor: idempotency.Actor{Kind: "connection", ID: "github", AuthMode: "webhook_signature"},
		Contributions: []idempotency.RemoteContributionRequest{{Provider: "github", RepositoryID: "acme/app",
			ContributionKind: "pull_request", ContributionID: "9001", ConnectionID: "github"}}})
	if !errors.Is(err, simulated) {
		t.Fatalf("Create = %v, want the simulated crash", err)
	}
	recovery := idempotency.New(st, discard, func() time.Time { return time.Now().Add(2 * time.Hour) }, providers.ContributionKinds())
	var opID string
	later := time.Now().Add(3 * time.Hour)
	ops, err := st.ListOpenOperations(ctx, later, later, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		if tk, err := st.GetTask(ctx, op.TaskID); err == nil && tk.Title == "Pull request 9001" {
			opID = op.ID
		}
	}
	if opID == "" {
		t.Fatalf("open operations %+v: none is the crashed creation", ops)
	}
	if _, err := recovery.RecoverTaskCreation(ctx, opID, "openapi-test"); !errors.Is(err, idempotency.ErrCreationStateConflict) {
		t.Fatalf("RecoverTaskCreation = %v, want the step left unknown", err)
	}
	opPath := "/api/v1/creations/" + opID
	var view struct {
		Generation int64 `json:"generation"`
		Steps      []struct {
			StepKey        string `json:"step_key"`
			State          string `json:"state"`
			EvidenceEffect string `json:"evidence_effect"`
		} `json:"steps"`
	}
	decode(t, c.call(http.MethodGet, opPath, nil, http.StatusOK).body, &view)
	if len(view.Steps) != 1 || view.Steps[0].State != "unknown" || view.Steps[0].EvidenceEffect != "conflict" {
		t.Fatalf("creation = %+v, want one unknown step with conflict evidence", view)
	}
	resolve := map[string]any{"kind": "remote_contribution_associate", "step_key": view.Steps[0].StepKey,
		"effect": "absent_proven", "generation": view.Generation}
	// The row is still there: absence is not proven.
	c.call(http.MethodPost, opPath+"/steps/resolve", resolve, http.StatusConflict)
	if err := st.DeleteAssociationsForTask(ctx, anchorTaskID); err != nil {
		t.Fatal(err)
	}
	decode(t, c.call(http.MethodPost, opPath+"/steps/resolve", resolve, http.StatusOK).body, &view)
	if view.Steps[0].State != "failed" {
		t.Errorf("resolved step = %+v, want failed", view.Steps[0])
	}
}

// TestOpenAPIRoutes checks the document against the routes: every route
// of the gateway's router is documented and every documented operation is
// routed, both by walking the router and over HTTP (a method a path does not
// serve answers 405, whose Allow header names exactly the methods the
// document gives that path); GET /api/v1/openapi.yaml serves the embedded
// document.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	spec, err := openapitest.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	documented := spec.Operations()
	routed := registeredRoutes(t)
	if len(routed) == 0 {
		t.Fatal("the router has no routes")
	}
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but not documented in docs/openapi.yaml", r)
		}
	}
	for _, op := range documented {
		if !slices.Contains(routed, op) {
			t.Errorf("operation %s is documented but the router does not serve it", op)
		}
	}

	g := startGateway(t, newDatabaseURL(t, "sqlite"))
	c := specClient{t: t, g: g}
	auth := http.Header{"Authorization": {"Bearer " + testAdminToken}}
	paths := map[string]bool{}
	for _, op := range documented {
		_, template, _ := strings.Cut(op, " ")
		paths[template] = true
	}
	for template := range paths {
		concrete := strings.NewReplacer("{id}", "some-id", "{connection}", "github", "{operation_id}", "some-op").Replace(template)
		// PUT is a method no route of the gateway serves.
		got := c.send(http.MethodPut, concrete, auth, nil)
		if got.status != http.StatusMethodNotAllowed {
			t.Errorf("PUT %s = %d %s, want 405", concrete, got.status, got.body)
			continue
		}
		openapitest.ValidateSchema(t, "Error", got.body)
		// A literal path may also match a sibling's template
		// (/api/v1/deliveries/replay and /api/v1/deliveries/{id}): the
		// methods of every documented path it matches are allowed.
		var methods []string
		for other := range paths {
			if templateMatches(other, concrete) {
				methods = append(methods, spec.Methods(other)...)
			}
		}
		slices.Sort(methods)
		if want := strings.Join(slices.Compact(methods), ", "); got.header.Get("Allow") != want {
			t.Errorf("PUT %s: Allow = %q, want the documented methods %q", concrete, got.header.Get("Allow"), want)
		}
	}

	got := c.send(http.MethodGet, documentPath, http.Header{}, nil)
	openapitest.ValidateResponse(t, http.MethodGet, documentPath, got.status, got.header, got.body)
	if got.status != http.StatusOK || !bytes.Equal(got.body, docs.OpenAPI) {
		t.Errorf("GET %s = %d with %d bytes, want 200 with the embedded document (%d bytes)",
			documentPath, got.status, len(got.body), len(docs.OpenAPI))
	}
}

// templateMatches reports whether path is an instance of the documented
// path template ({name} stands for one segment).
func templateMatches(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if ts[i] != ps[i] && !(strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}")) {
			return false
		}
	}
	return true
}

// TestOpenAPIValidationCatchesDrift makes sure the checks above can fail: a
// real answer of the server, drifted, no longer validates.
func TestOpenAPIValidationCatchesDrift(t *testing.T) {
	t.Parallel()
	spec, err := openapitest.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, newDatabaseURL(t, "sqlite"))
	c := specClient{t: t, g: g}
	got := c.call(http.MethodPost, "/api/v1/tasks", map[string]any{"workspace_id": testWorkspace, "title": "Drift"}, http.StatusOK)
	var fields map[string]any
	decode(t, got.body, &fields)
	for _, tc := range []struct {
		name  string
		drift func(m map[string]any)
	}{
		{"a required field removed", func(m map[string]any) { delete(m, "creation_complete") }},
		{"a field of another type", func(m map[string]any) { m["labels"] = "none" }},
		{"an undocumented field", func(m map[string]any) { m["revision"] = 1 }},
		{"null where a value is required", func(m map[string]any) { m["identifier"] = nil }},
	} {
		m := map[string]any{}
		for k, v := range fields {
			m[k] = v
		}
		tc.drift(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.CheckResponse(http.MethodPost, "/api/v1/tasks", got.status, got.header, b); err == nil {
			t.Errorf("%s: %s validates, want an error", tc.name, b)
		}
	}
	if err := spec.CheckResponse(http.MethodPost, "/api/v1/tasks", http.StatusCreated, got.header, got.body); err == nil {
		t.Errorf("an undocumented status (201) validates, want an error")
	}
	if err := spec.CheckResponse(http.MethodPost, "/api/v1/tasks", got.status, got.header, got.body); err != nil {
		t.Errorf("the real answer does not validate: %v", err)
	}
}
