package main

// After a transfer and a delete, neither issue brings the task back.

import (
	"net/http"
	"slices"
	"testing"
)

// TestTransferThenDeleteSuppressesBoth: GitHub moves issue A to B (the task
// follows, B becomes its alias); the task is then deleted, by B's delete
// or by an operator. Every later delivery for A or for B — redeliveries of
// their events, a replay of A's opening — is suppressed, and no task comes
// back.
func TestTransferThenDeleteSuppressesBoth(t *testing.T) {
	t.Parallel()
	deletes := []struct {
		name   string
		delete func(t *testing.T, g *gateway, taskID string)
	}{
		{"B deleted at GitHub", func(t *testing.T, g *gateway, _ string) {
			if d := g.process(t, fixtureHook(t, "github/issues.deleted.json")); d.Status != "succeeded" || d.action() != "delete" {
				t.Fatalf("delete: %s %s (%s), want succeeded delete", d.Status, d.action(), d.result())
			}
		}},
		{"deleted by an operator", func(t *testing.T, g *gateway, taskID string) {
			if status, body := g.apiDo(t, http.MethodDelete, "/api/v1/tasks/"+taskID, nil); status != http.StatusNoContent {
				t.Fatalf("DELETE task = %d %s, want 204", status, body)
			}
		}},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range deletes {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				openedA := g.process(t, ghOldIssueOpenedBefore(t))
				transfer := g.process(t, fixtureHook(t, "github/issues.transferred.json"))
				if transfer.taskID() != openedA.taskID() || transfer.action() != "alias" {
					t.Fatalf("transfer: task %s action %s, want %s alias", transfer.taskID(), transfer.action(), openedA.taskID())
				}
				tc.delete(t, g, openedA.taskID())
				if ts := g.tasks(t); len(ts) != 0 {
					t.Fatalf("tasks after the delete = %v, want none", taskSummaries(ts))
				}

				for _, h := range []hook{
					ghOldIssueOpenedBefore(t),                                 // A
					fixtureHook(t, "github/issues.transferred.json"),          // A → B
					fixtureHook(t, "github/issues.opened.with-transfer.json"), // B
					fixtureHook(t, "github/issues.opened.json"),               // B
					fixtureHook(t, "github/issues.edited.json"),               // B
				} {
					if d := g.process(t, h); d.Status != "suppressed" {
						t.Errorf("%s: %s (%s), want suppressed", h.Event, d.Status, d.result())
					}
				}
				// A replay of A's first delivery, as an operator would.
				if status, body := g.apiDo(t, http.MethodPost, "/api/v1/deliveries/"+openedA.ID+"/replay", nil); status != http.StatusAccepted {
					t.Fatalf("replay = %d %s, want 202", status, body)
				}
				if d := g.waitDelivery(t, openedA.ID); d.Status != "suppressed" {
					t.Errorf("A's opening replayed: %s (%s), want suppressed", d.Status, d.result())
				}
				if ts := g.tasks(t); len(ts) != 0 {
					t.Errorf("tasks after the redeliveries = %v, want none", taskSummaries(ts))
				}
				var suppressed []string
				for _, s := range g.suppressions(t) {
					suppressed = append(suppressed, s.ExternalID)
				}
				for _, ext := range []string{ghOldIssueID, ghIssueID} {
					if !slices.Contains(suppressed, ext) {
						t.Errorf("suppressions %q, want %s among them", suppressed, ext)
					}
				}
			})
		}
	})
}
