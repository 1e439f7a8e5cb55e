package main

// gateway deliveries: the filter flags of list and of the bulk replay
// become the API's query parameters and JSON fields, a replay with an ID
// stays a single replay, and what the API answers is printed.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordedRequest is what the fake gateway received.
type recordedRequest struct {
	method, path, contentType string
	query                     url.Values
	body                      map[string]any
}

// fakeOperatorAPI answers every request with answer and records it.
func fakeOperatorAPI(t *testing.T, answer string) (*httptest.Server, func() []recordedRequest) {
	t.Helper()
	var mu sync.Mutex
	var got []recordedRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rr := recordedRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), contentType: r.Header.Get("Content-Type")}
		raw, _ := io.ReadAll(r.Body)
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rr.body); err != nil {
				t.Errorf("request body %q: %v", raw, err)
			}
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization = %q, want the admin token", r.Header.Get("Authorization"))
		}
		mu.Lock()
		got = append(got, rr)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recordedRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]recordedRequest(nil), got...)
	}
}

func TestDeliveriesCLIFilters(t *testing.T) {
	t.Parallel()
	const answer = `{"matched":1,"replayed":1,"skipped":0,"deliveries":[]}`
	tests := []struct {
		name       string
		args       []string
		wantMethod string
		wantPath   string
		wantQuery  url.Values
		wantBody   map[string]any
	}{
		{"list without filters", []string{"list"}, http.MethodGet, "/api/v1/deliveries", url.Values{}, nil},
		{"list with every filter", []string{"list", "--status", "failed", "--connection", "gh", "--event", "issues",
			"--received-after", "2026-01-02T03:04:05Z", "--received-before", "2026-01-03T00:00:00Z",
			"--error-contains", "time out", "--external-id", "github:github.com:issue:1", "--delivery-key", "72d3162e",
			"--limit", "5", "--cursor", "c"},
			http.MethodGet, "/api/v1/deliveries", url.Values{"status": {"failed"}, "connection": {"gh"}, "event": {"issues"},
				"received_after": {"2026-01-02T03:04:05Z"}, "received_before": {"2026-01-03T00:00:00Z"},
				"error_contains": {"time out"}, "external_id": {"github:github.com:issue:1"}, "delivery_key": {"72d3162e"},
				"limit": {"5"}, "cursor": {"c"}}, nil},
		{"replay one", []string{"replay", "0193a5e2-8c1f-7d4e-9b2a-3f6c8d1e2a4b"}, http.MethodPost,
			"/api/v1/deliveries/0193a5e2-8c1f-7d4e-9b2a-3f6c8d1e2a4b/replay", url.Values{}, nil},
		{"bulk replay", []string{"replay", "--status", "failed", "--connection", "gh"}, http.MethodPost,
			"/api/v1/deliveries/replay", url.Values{}, map[string]any{"status": "failed", "connection": "gh", "dry_run": false}},
		{"bulk replay of a delivery key", []string{"replay", "--delivery-key", "72d3162e"}, http.MethodPost,
			"/api/v1/deliveries/replay", url.Values{}, map[string]any{"delivery_key": "72d3162e", "dry_run": false}},
		{"bulk dry run with max", []string{"replay", "--event", "push", "--error-contains", "x", "--external-id", "e",
			"--received-before", "2026-01-03T00:00:00Z", "--dry-run", "--max", "50"}, http.MethodPost, "/api/v1/deliveries/replay", url.Values{},
			map[string]any{"event": "push", "error_contains": "x", "external_id": "e", "received_before": "2026-01-03T00:00:00Z",
				"dry_run": true, "max": float64(50)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, got := fakeOperatorAPI(t, answer)
			args := append([]string{"deliveries"}, tt.args...)
			args = append(args, "--url", srv.URL, "--admin-token", "tok", "-o", "json")
			code, out, errOut := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			reqs := got()
			if len(reqs) != 1 {
				t.Fatalf("requests = %+v, want one", reqs)
			}
			r := reqs[0]
			if r.method != tt.wantMethod || r.path != tt.wantPath || r.query.Encode() != tt.wantQuery.Encode() {
				t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query.Encode(), tt.wantMethod, tt.wantPath, tt.wantQuery.Encode())
			}
			gotBody, _ := json.Marshal(r.body)
			wantBody, _ := json.Marshal(tt.wantBody)
			if string(gotBody) != string(wantBody) {
				t.Errorf("body = %s, want %s", gotBody, wantBody)
			}
			if tt.wantBody != nil && r.contentType != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", r.contentType)
			}
			// With -o json, what the API answered is printed (indented).
			var printed map[string]any
			if err := json.Unmarshal([]byte(out), &printed); err != nil || printed["matched"] != float64(1) || !strings.Contains(out, "\n  ") {
				t.Errorf("stdout = %q, want the answer, indented", out)
			}
		})
	}
}

// TestDeliveriesCLISince: --since is relative to now; it sets
// received_after on both the list and the bulk replay.
func TestDeliveriesCLISince(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"list", "replay"} {
		t.Run(sub, func(t *testing.T) {
			t.Parallel()
			srv, got := fakeOperatorAPI(t, `{}`)
			before := time.Now()
			code, _, errOut := runCLI(t, "deliveries", sub, "--status", "failed", "--since", "2h", "--url", srv.URL, "--admin-token", "tok")
			after := time.Now()
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			r := got()[0]
			v := r.query.Get("received_after")
			if sub == "replay" {
				v, _ = r.body["received_after"].(string)
			}
			at, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				t.Fatalf("received_after = %q: %v", v, err)
			}
			if at.Before(before.Add(-2*time.Hour).Truncate(time.Microsecond)) || at.After(after.Add(-2*time.Hour)) {
				t.Errorf("received_after = %v, want two hours before the command ran (%v…%v)", at, before, after)
			}
		})
	}
}

func TestDeliveriesCLIUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		wantMsg string
	}{
		{[]string{"replay"}, "a delivery ID, or at least one filter to replay many, is required"},
		{[]string{"replay", "--dry-run"}, "a delivery ID, or at least one filter to replay many, is required"},
		{[]string{"replay", "some-id", "--status", "failed"}, "exactly one delivery ID is required to replay one delivery, or none with filters to replay many"},
		{[]string{"replay", "a", "b"}, "exactly one delivery ID is required"},
		{[]string{"replay", "--status", "failed", "--since", "2h", "--received-after", "2026-01-02T03:04:05Z"}, "--since must be positive, and not given with --received-after"},
		{[]string{"list", "--since", "-1h"}, "--since must be positive"},
		{[]string{"list", "--since", "2 days"}, `invalid value "2 days" for flag -since`},
		{[]string{"replay", "--status", "failed", "--max", "many"}, `invalid value "many" for flag -max`},
		{[]string{"get", "--status", "failed", "id"}, "flag provided but not defined: -status"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, append([]string{"deliveries"}, tt.args...)...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if !strings.Contains(errOut, tt.wantMsg) || !strings.Contains(errOut, "usage: gateway deliveries") {
				t.Errorf("stderr = %q, want %q and the usage", errOut, tt.wantMsg)
			}
		})
	}
}

// TestDeliveriesCLIAgainstTheGateway: the filters and the bulk replay
// through a running gateway, on each dialect.
func TestDeliveriesCLIAgainstTheGateway(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		code, out, errOut := runCLI(t, "send", "--url", g.URL, "--config", g.Config, "--connection", "github",
			"--file", filepath.Join(fixturesDir, "github/issues.opened.json"))
		if code != 0 {
			t.Fatalf("send: exit %d %s%s", code, out, errOut)
		}
		var r receipt
		if _, body, _ := strings.Cut(out, " Accepted "); json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("send printed %q", out)
		}
		g.waitDelivery(t, r.DeliveryID)
		op := []string{"--url", g.URL, "--admin-token", testAdminToken, "-o", "json"}

		code, out, errOut = runCLI(t, append([]string{"deliveries", "list", "--connection", "github", "--status", "succeeded", "--since", "1h"}, op...)...)
		var page struct {
			Deliveries []struct {
				ID          string
				DeliveryKey string `json:"delivery_key"`
			} `json:"deliveries"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 1 || page.Deliveries[0].ID != r.DeliveryID {
			t.Fatalf("list: exit %d %s%s, want the delivery sent", code, out, errOut)
		}
		// The provider's delivery ID finds it: the GUID alone, or the key
		// as stored ("<hook id>:<GUID>").
		stored := page.Deliveries[0].DeliveryKey
		_, guid, ok := strings.Cut(stored, ":")
		if !ok || guid == "" {
			t.Fatalf("stored delivery key %q, want GitHub's <hook id>:<GUID>", stored)
		}
		for _, key := range []string{guid, stored} {
			code, out, errOut = runCLI(t, append([]string{"deliveries", "list", "--delivery-key", key}, op...)...)
			if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 1 || page.Deliveries[0].ID != r.DeliveryID {
				t.Errorf("list --delivery-key %s (stored %s): exit %d %s%s, want the delivery sent", key, stored, code, out, errOut)
			}
		}
		code, out, _ = runCLI(t, append([]string{"deliveries", "list", "--status", "failed"}, op...)...)
		if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 0 {
			t.Errorf("list failed: exit %d %s, want none", code, out)
		}

		var dry struct {
			Matched, Skipped int
			Replayed         *int
			WouldReplay      *int `json:"would_replay"`
		}
		code, out, errOut = runCLI(t, append([]string{"deliveries", "replay", "--connection", "github", "--since", "1h", "--dry-run"}, op...)...)
		if code != 0 || json.Unmarshal([]byte(out), &dry) != nil || dry.Matched != 1 || dry.Replayed != nil ||
			dry.WouldReplay == nil || *dry.WouldReplay != 1 || dry.Skipped != 0 {
			t.Fatalf("dry run: exit %d %s%s, want 1 matched, would_replay 1 and no replayed", code, out, errOut)
		}
		var res struct{ Matched, Replayed, Skipped int }
		if d := g.waitDelivery(t, r.DeliveryID); d.Status != "succeeded" || d.Attempts != 1 {
			t.Errorf("after a dry run: %s at attempt %d, want succeeded as it was", d.Status, d.Attempts)
		}
		code, out, errOut = runCLI(t, append([]string{"deliveries", "replay", "--connection", "github", "--since", "1h"}, op...)...)
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Matched != 1 || res.Replayed != 1 {
			t.Fatalf("replay: exit %d %s%s, want 1 replayed", code, out, errOut)
		}
		// Processed again, with today's config: the task exists, so the
		// outcome is no new task.
		if d := g.waitDelivery(t, r.DeliveryID); d.Status != "succeeded" || d.Attempts != 1 {
			t.Errorf("after the replay: %s at attempt %d, want succeeded afresh", d.Status, d.Attempts)
		}
		code, _, errOut = runCLI(t, append([]string{"deliveries", "replay", "--status", "bogus"}, op...)...)
		if code != 1 || !strings.Contains(errOut, "400") {
			t.Errorf("replay --status bogus: exit %d stderr %q, want 1 and the gateway's 400", code, errOut)
		}
	})
}
