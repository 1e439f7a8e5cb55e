package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSubscriptionsCLI drives `gateway subscriptions` against a running
// gateway: create (its secret printed once), list, get, update, the
// deliveries of an event sent, replay, rotate-secret and delete, in tables
// and as JSON; errors carry the API's message.
func TestSubscriptionsCLI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", outboundConfig(t))
		rc := newHookReceiver(t)
		cli := func(t *testing.T, args ...string) (string, string) {
			t.Helper()
			args = append(args, "--url", g.URL, "--token", testAdminToken, "--workspace", testWorkspace)
			code, out, errOut := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("gateway %s: exit %d, stderr %s", strings.Join(args[:2], " "), code, errOut)
			}
			return out, errOut
		}
		out, _ := cli(t, "subscriptions", "create", "--endpoint", rc.srv.URL, "--types", "task.created, task.updated", "--description", "ci", "-o", "json")
		var created subscriptionJSON
		if err := json.Unmarshal([]byte(out), &created); err != nil || !strings.HasPrefix(created.Secret, "whsec_") {
			t.Fatalf("create -o json printed %s (%v)", out, err)
		}
		rc.mu.Lock()
		rc.secret = created.Secret
		rc.mu.Unlock()
		out, _ = cli(t, "subscriptions", "list")
		if !strings.Contains(out, created.ID) || !strings.Contains(out, "task.created,task.updated") || !strings.Contains(out, "enabled") ||
			strings.Contains(out, created.Secret) {
			t.Errorf("list printed\n%s", out)
		}
		out, _ = cli(t, "subscriptions", "get", created.ID)
		if !strings.Contains(out, "url") || !strings.Contains(out, rc.srv.URL) || strings.Contains(out, "whsec_") {
			t.Errorf("get printed\n%s", out)
		}

		d := g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if d.Status != "succeeded" {
			t.Fatalf("delivery %s", d.Status)
		}
		poll(t, "the event at the receiver", waitTimeout, func() bool { return len(rc.requests()) == 1 })
		id := rc.requests()[0].ID
		poll(t, "the delivery recorded", waitTimeout, func() bool {
			out, _ := cli(t, "subscriptions", "deliveries", created.ID, "--status", "succeeded")
			return strings.Contains(out, id) && strings.Contains(out, "task.created")
		})
		out, _ = cli(t, "subscriptions", "replay", created.ID, "--event", id)
		if !strings.HasPrefix(out, "1 replayed") {
			t.Errorf("replay printed %q", out)
		}
		poll(t, "the replayed event", waitTimeout, func() bool { return len(rc.requests()) == 2 })
		if r := rc.requests()[1]; r.ID != id || r.VerifyErr != nil {
			t.Errorf("replay = %s (verify %v), want %s again", r.ID, r.VerifyErr, id)
		}

		out, _ = cli(t, "subscriptions", "update", created.ID, "--disable", "--types", "")
		if !strings.Contains(out, "disabled") || !strings.Contains(out, "every type") {
			t.Errorf("update printed\n%s", out)
		}
		out, _ = cli(t, "subscriptions", "rotate-secret", created.ID)
		if !strings.Contains(out, "shown only now") || !strings.Contains(out, "whsec_") || strings.Contains(out, created.Secret) {
			t.Errorf("rotate-secret printed\n%s", out)
		}
		out, _ = cli(t, "subscriptions", "delete", created.ID)
		if !strings.Contains(out, "deleted subscription "+created.ID) {
			t.Errorf("delete printed %q", out)
		}

		// Errors: the API's message, or the usage.
		code, _, errOut := runCLI(t, "subscriptions", "get", created.ID, "--url", g.URL, "--token", testAdminToken, "--workspace", testWorkspace)
		if code != 1 || !strings.Contains(errOut, "subscription not found") {
			t.Errorf("get after delete: exit %d, stderr %q", code, errOut)
		}
		code, _, errOut = runCLI(t, "subscriptions", "create", "--endpoint", "ftp://x", "--url", g.URL, "--token", testAdminToken, "--workspace", testWorkspace)
		if code != 1 || !strings.Contains(errOut, "url must be an http or https URL") {
			t.Errorf("create with a bad URL: exit %d, stderr %q", code, errOut)
		}
		code, _, errOut = runCLI(t, "subscriptions", "list", "--url", g.URL)
		if code != 1 || !strings.Contains(errOut, "a token is required") {
			t.Errorf("list without a token: exit %d, stderr %q", code, errOut)
		}
		code, _, errOut = runCLI(t, "subscriptions", "replay", created.ID, "--url", g.URL, "--token", testAdminToken)
		if code != 2 || !strings.Contains(errOut, "exactly one of --event and --since is required") {
			t.Errorf("replay without --event or --since: exit %d, stderr %q", code, errOut)
		}
	})
}
