package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// An operator opens the subscriptions, finds the event a receiver failed
// for good, replays it from the subscription's page, and the receiver gets
// it again with the same webhook-id.
func TestConsoleBrowserReplaysAnOutboundDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := newBrowser(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", outboundConfig(t))
		rc := newHookReceiver(t)
		rc.fail = 5 // every attempt of the schedule: failed for good
		sub := g.subscribe(t, rc)
		g.process(t, fixtureHook(t, "github/issues.opened.json"))
		var page struct {
			Deliveries []struct {
				EventID string `json:"event_id"`
			} `json:"deliveries"`
		}
		poll(t, "the delivery failed for good", waitTimeout, func() bool {
			g.getJSON(t, "/api/v1/workspaces/"+testWorkspace+"/subscriptions/"+sub.ID+"/deliveries?status=failed", &page)
			return len(page.Deliveries) == 1
		})
		id := page.Deliveries[0].EventID

		signIn(t, ctx, g, testAdminToken)
		browse(t, ctx, "open the subscriptions",
			chromedp.Click(chromedp.CSS(`a[href="/ui/subscriptions"]`)),
			chromedp.WaitVisible(chromedp.CSS(`a[href="/ui/subscriptions/`+sub.ID+`"]`)),
			chromedp.Click(chromedp.CSS(`a[href="/ui/subscriptions/`+sub.ID+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Replay event `+id+`"]`)))
		if got := text(t, ctx, "table.list tbody .status"); got != "failed" {
			t.Errorf("the delivery shows %q, want failed", got)
		}
		browse(t, ctx, "replay it", chromedp.Click(chromedp.CSS(`button[aria-label="Replay event `+id+`"]`)),
			chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if got := text(t, ctx, "p.notice"); !strings.HasPrefix(got, "Replayed 1") {
			t.Errorf("after the replay the notice is %q", got)
		}
		poll(t, "the event received again", waitTimeout, func() bool { return rc.byID()[id] == 6 })
		last := rc.requests()[5]
		if last.ID != id || last.VerifyErr != nil {
			t.Errorf("the replay = %s (signature %v), want %s, verified", last.ID, last.VerifyErr, id)
		}
	})
}
