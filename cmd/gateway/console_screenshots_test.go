package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trackergateway/gateway/internal/store"
)

// TestConsoleScreenshots renders the screenshots of docs/ (the overview
// and a failed delivery) from a gateway holding an hour of deliveries. It
// runs only when GATEWAY_CONSOLE_SCREENSHOTS names the folder to write
// them to:
//
//	GATEWAY_CONSOLE_SCREENSHOTS=$PWD/docs go test ./cmd/gateway -run TestConsoleScreenshots
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv("GATEWAY_CONSOLE_SCREENSHOTS")
	if dir == "" {
		t.Skip("GATEWAY_CONSOLE_SCREENSHOTS is not set: no screenshots taken")
	}
	ctx := newBrowser(t)
	dbURL := newDatabaseURL(t, "sqlite")
	seedHourOfDeliveries(t, dbURL)
	g := startGateway(t, dbURL)
	poll(t, "the seeded deliveries to finish", waitTimeout, func() bool {
		for _, d := range g.deliveries(t) {
			if !finalStatus(d.Status) {
				return false
			}
		}
		return true
	})
	failed := g.process(t, failingHook(t))

	signIn(t, ctx, g, testAdminToken)
	for _, shot := range []struct{ path, file string }{
		{"/ui/", "console-overview.png"},
		{"/ui/deliveries/" + failed.ID, "console-delivery.png"},
	} {
		browse(t, ctx, "open "+shot.path, chromedp.Navigate(g.URL+shot.path), chromedp.WaitVisible(chromedp.CSS("main h1")))
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", shot.path, err)
		}
		if err := os.WriteFile(filepath.Join(dir, shot.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// seedHourOfDeliveries stores, before the gateway starts, GitHub issues
// received over the last hour and a few GitLab deliveries that fail: the
// gateway processes them as it would have then.
func seedHourOfDeliveries(t *testing.T, dbURL string) {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, dbURL, newLogger(os.Stderr, "error"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var ds []store.Delivery
	for i := range 90 {
		at := now.Add(-time.Duration(i*37) * time.Second)
		id := int64(900000 + i)
		body := githubIssueOpened(t, id, id, fmt.Sprintf("Seeded issue %d", i))
		if i%7 == 3 {
			body = []byte(`{"action":"opened","issue":"truncated"}`) // fails to parse
		}
		ds = append(ds, store.Delivery{ConnectionID: "github", Provider: "github", Event: "issues",
			DeliveryKey: fmt.Sprintf("seed-%d", i), ReceivedAt: at, NextAttemptAt: at,
			Headers: `{"Content-Type":["application/json"],"X-Github-Event":["issues"],"User-Agent":["GitHub-Hookshot/044aadd"]}`,
			Body:    body})
		if i%9 == 4 {
			ds = append(ds, store.Delivery{ConnectionID: "gitlab", Provider: "gitlab", Event: "Issue Hook",
				DeliveryKey: fmt.Sprintf("seed-gitlab-%d", i), ReceivedAt: at, NextAttemptAt: at,
				Headers: `{"Content-Type":["application/json"],"X-Gitlab-Event":["Issue Hook"]}`,
				Body:    readFixture(t, "gitlab/merge_request.json")})
		}
	}
	if _, err := st.InsertDeliveries(ctx, ds); err != nil {
		t.Fatal(err)
	}
}
