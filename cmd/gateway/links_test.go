package main

// End-to-end tests of links an issue makes to pull and merge requests by
// URL (Linear attachments) and of former references (a Linear identifier
// before a team move), on both dialects.

import (
	"net/http"
	"strings"
	"testing"
)

// TestAttachedPullRequestLinks: a pull request attached to a Linear issue
// before the gateway has seen it links to the issue's task when it
// arrives, instead of creating a task of its own; its later deliveries
// keep the task's projection current; the attachment resent (a new
// delivery ID) or arriving again late changes nothing.
func TestAttachedPullRequestLinks(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		// The attachment comes first, before even the issue's create.
		attached := fixtureHook(t, "linear/attachment.create.json").withKey("attach-1")
		d := g.process(t, attached)
		if d.Status != "succeeded" || d.action() != "link" || d.taskID() != "" ||
			d.result() != "pull request codertocat/hello-world#2 recorded; the issue has no task yet" {
			t.Fatalf("attachment before the issue: %q %q task %q (%s)", d.Status, d.action(), d.taskID(), d.result())
		}
		issue := g.process(t, fixtureHook(t, "linear/issue.create.json"))
		if issue.action() != "create" {
			t.Fatalf("issue: %q (%s), want create", issue.action(), issue.result())
		}
		// The resend is the same link: recorded again, shown nowhere yet.
		if d := g.process(t, attached.withKey("attach-2")); d.Status != "succeeded" || d.taskID() != issue.taskID() ||
			!strings.Contains(d.result(), "links when the gateway receives it") {
			t.Errorf("attachment resent: %q task %q (%s)", d.Status, d.taskID(), d.result())
		}
		pr := g.process(t, fixtureHook(t, "github/pull_request.opened.json"))
		if pr.Status != "succeeded" || pr.action() != "link" || pr.taskID() != issue.taskID() ||
			pr.result() != "linked to ENG-123, which links to it" {
			t.Fatalf("pull request: %q %q on %q (%s), want linked to %s", pr.Status, pr.action(), pr.taskID(), pr.result(), issue.taskID())
		}
		if ts := g.tasks(t); len(ts) != 1 {
			t.Errorf("tasks = %v, want the Linear issue's only", taskSummaries(ts))
		}
		checkContributions(t, g, issue.taskID(), []contribution{ghPR.state("open")})
		if d := g.process(t, fixtureHook(t, "github/pull_request.closed.json")); d.taskID() != issue.taskID() {
			t.Errorf("pull request closed: task %q (%s), want %s", d.taskID(), d.result(), issue.taskID())
		}
		checkContributions(t, g, issue.taskID(), []contribution{ghPR.state("closed")})
		// Removing the attachment does not undo the link the pull request
		// made through the coordinator.
		if d := g.process(t, fixtureHook(t, "linear/attachment.remove.json")); d.Status != "succeeded" || d.action() != "unlink" ||
			d.result() != "pull request codertocat/hello-world#2 unlinked; it stays on the task, which it linked to itself" {
			t.Errorf("attachment removed: %q %q (%s)", d.Status, d.action(), d.result())
		}
		checkContributions(t, g, issue.taskID(), []contribution{ghPR.state("closed")})
		// The create arriving again after the removal is older: not applied.
		if d := g.process(t, attached.withKey("attach-3")); d.result() != "stale update skipped (older than the last applied event)" {
			t.Errorf("attachment after its removal: %q (%s), want stale", d.Status, d.result())
		}
	})
}

// TestAttachedPullRequestFollowsItsDeliveries: a pull request that made a
// task of its own, then attached to a Linear issue, shows on the issue's
// task too, and each delivery of it updates both; a removed attachment
// takes it off the issue's task only.
func TestAttachedPullRequestFollowsItsDeliveries(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		own := g.process(t, fixtureHook(t, "github/pull_request.opened.json"))
		issue := g.process(t, fixtureHook(t, "linear/issue.create.json"))
		if d := g.process(t, fixtureHook(t, "linear/attachment.create.json")); d.taskID() != issue.taskID() {
			t.Fatalf("attachment: task %q (%s), want %s", d.taskID(), d.result(), issue.taskID())
		}
		closed := g.process(t, fixtureHook(t, "github/pull_request.closed.json"))
		if closed.taskID() != own.taskID() || !strings.HasSuffix(closed.result(), "; shown on 1 task(s) of issues linking to it") {
			t.Errorf("pull request closed: task %q (%s), want its own %s, shown on the issue's", closed.taskID(), closed.result(), own.taskID())
		}
		for _, id := range []string{own.taskID(), issue.taskID()} {
			checkContributions(t, g, id, []contribution{ghPR.state("closed")})
		}
		unlinked := g.process(t, fixtureHook(t, "linear/attachment.remove.json"))
		if unlinked.result() != "pull request codertocat/hello-world#2 unlinked" {
			t.Errorf("attachment removed: %s", unlinked.result())
		}
		// The link and unlink outcomes and the linked task's contributions
		// read as the API document says.
		c := specClient{t: t, g: g}
		for _, path := range []string{"/api/v1/deliveries/" + unlinked.ID, "/api/v1/tasks/" + own.taskID() + "/contributions",
			"/api/v1/deliveries?connection=linear"} {
			c.call(http.MethodGet, path, nil, http.StatusOK)
		}
		checkContributions(t, g, issue.taskID(), nil)
		checkContributions(t, g, own.taskID(), []contribution{ghPR.state("closed")})
		if d := g.process(t, fixtureHook(t, "github/pull_request.reopened.json")); strings.Contains(d.result(), "shown on") {
			t.Errorf("pull request reopened after the removal: %s, want shown on no other task", d.result())
		}
		checkContributions(t, g, issue.taskID(), nil)
	})
}

// TestPullRequestNamingAFormerIdentifierLinks: after ENG-123 moves to team
// OPS (now OPS-7), a pull request whose branch names ENG-123 still finds
// its task, on both dialects: from the reference the move replaced, from
// Linear's previousIdentifiers, or from both.
func TestPullRequestNamingAFormerIdentifierLinks(t *testing.T) {
	t.Parallel()
	withoutPrevious := func(t testing.TB) hook {
		return bodyHook(t, "linear", "issue.update.team-moved.json",
			mutate(t, readFixture(t, "linear/issue.update.team-moved.json"), func(m map[string]any) {
				obj(t, m, "data")["previousIdentifiers"] = []any{}
			}))
	}
	cases := []struct {
		name  string
		hooks []hookFn
	}{
		{"created, then moved", []hookFn{fx("linear/issue.create.json"), fx("linear/issue.update.team-moved.json")}},
		{"the move replaces the reference the gateway saw", []hookFn{fx("linear/issue.create.json"), withoutPrevious}},
		{"first seen after the move", []hookFn{fx("linear/issue.update.team-moved.json")}},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				g := startGateway(t, newDatabaseURL(t, dialect))
				var issue delivery
				for i, h := range tc.hooks {
					if issue = g.process(t, h(t)); issue.Status != "succeeded" {
						t.Fatalf("hook %d: %q (%s)", i, issue.Status, issue.result())
					}
				}
				body := mutate(t, readFixture(t, "github/pull_request.opened.json"), func(m map[string]any) {
					obj(t, obj(t, m, "pull_request"), "head")["ref"] = "ENG-123-export-timeout"
				})
				d := g.process(t, hook{Conn: "github", Event: "pull_request", Body: body})
				if d.action() != "link" || d.taskID() != issue.taskID() {
					t.Errorf("pull request naming ENG-123: %q on %q (%s), want linked to %s", d.action(), d.taskID(), d.result(), issue.taskID())
				}
				if ts := g.tasks(t); len(ts) != 1 || ts[0].Source == nil || ts[0].Source.Ref != "OPS-7" {
					t.Errorf("tasks = %v, want the one of OPS-7", taskSummaries(ts))
				}
			})
		}
	})
}
