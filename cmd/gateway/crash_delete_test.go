package main

// kill -9 inside a provider delete, and the restart after it.

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/ingest"
	"github.com/trackergateway/gateway/internal/store"
)

// TestCrashInsideDelete kills the gateway (SIGKILL, from the failpoint
// right after a delete delivery's first write commits) and restarts it:
// at the kill the task is gone and its suppression recorded, never one
// without the other (a suppression alone would turn the delete's retry
// away and keep the task for good); after the restart the delivery
// finishes and nothing brings the task back.
//
// On SQLite the delivery lease is an hour: the delivery the kill cut off
// finishes after the restart only because the new gateway, the database's
// one owner, takes back its predecessor's delivery and entity leases at
// start-up. PostgreSQL replicas share the database, so there the lease
// (a few seconds here) expires first.
func TestCrashInsideDelete(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		lease := map[string]string{"sqlite": "1h", "postgres": "3s"}[dialect]
		dbURL := newDatabaseURL(t, dialect)
		cfg := writeConfig(t)
		opened := fixtureHook(t, "github/issues.opened.json")
		deleted := fixtureHook(t, "github/issues.deleted.json").withKey("crash-inside-delete")

		killed := spawnProcessEnv(t, []string{failpointEnv + "=" + ingest.FailAfterDelete}, dbURL, cfg, "gateway-1", "--delivery-lease", lease)
		killed.waitListening(t)
		if d := killed.process(t, opened); d.Status != "succeeded" {
			t.Fatalf("opened: %s (%s), want succeeded", d.Status, str(d.LastError))
		}
		// The answer may be lost to the kill; the resend below finds the
		// delivery either way.
		_, _, _ = killed.postWebhook(deleted.Conn, deleted.header(githubSecret), deleted.Body)
		select {
		case <-killed.exited:
		case <-time.After(waitTimeout):
			t.Fatalf("the gateway did not reach the failpoint within %s", waitTimeout)
		}
		if ws, ok := killed.state.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("gateway ended with %v, want killed by SIGKILL at the failpoint", killed.state)
		}

		// What the kill left.
		ctx := context.Background()
		st, err := openStore(ctx, dbURL, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		_, taskErr := st.LookupTaskByExternalID(ctx, testWorkspace, ghIssueID)
		_, suppressionErr := st.GetSuppression(ctx, testWorkspace, ghIssueID)
		st.Close()
		if suppressionErr != nil {
			t.Fatalf("at the kill: suppression of %s: %v, want it recorded", ghIssueID, suppressionErr)
		}
		if !errors.Is(taskErr, store.ErrNotFound) {
			t.Fatalf("at the kill: the task of %s is still there (%v) beside its suppression: the delete and the suppression were not one step",
				ghIssueID, taskErr)
		}

		second := startProcess(t, dbURL, cfg, "gateway-2", "--delivery-lease", lease)
		d := second.waitDelivery(t, second.deliver(t, deleted).DeliveryID)
		if d.Status != "suppressed" && d.Status != "succeeded" {
			t.Errorf("delete after the restart: %s (%s), want suppressed or succeeded", d.Status, str(d.LastError))
		}
		for _, h := range []hook{opened, fixtureHook(t, "github/issues.edited.json")} {
			if d := second.process(t, h); d.Status != "suppressed" {
				t.Errorf("%s after the delete: %s, want suppressed", h.Event, d.Status)
			}
		}
		if ts := second.tasks(t); len(ts) != 0 {
			t.Errorf("tasks after the restart = %v, want none", taskSummaries(ts))
		}
	})
}
