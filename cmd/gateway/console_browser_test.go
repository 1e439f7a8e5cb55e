package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The console's end-to-end tests drive a real headless Chromium against a
// gateway started as `gateway serve` (startGateway). .ci/run installs
// Chromium, so CI always runs them; elsewhere they skip, saying so, when
// no browser is found.

// chromiumPath finds the browser: CHROME_PATH, else chromium,
// chromium-browser or google-chrome on the PATH.
func chromiumPath() (string, bool) {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// browserTimeout bounds everything one browser test does.
const browserTimeout = 5 * time.Minute

// newBrowser starts a headless Chromium for the test (closed at cleanup)
// and returns the context its actions run in.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, ok := chromiumPath()
	if !ok {
		t.Skip("no Chromium found (set CHROME_PATH, or install chromium): the console's browser tests are skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900),
		// Root (CI, containers) cannot use Chromium's sandbox.
		chromedp.NoSandbox)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// browse runs actions, failing the test with what it was doing.
func browse(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// text reads the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("read %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatalf("read the location: %v", err)
	}
	return loc
}

// signIn opens the console, is sent to the sign-in form and signs in.
func signIn(t *testing.T, ctx context.Context, g *gateway, token string) {
	t.Helper()
	browse(t, ctx, "open the console", chromedp.Navigate(g.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := location(t, ctx); loc != g.URL+"/ui/login" {
		t.Fatalf("the console without a session is at %s, want the sign-in form", loc)
	}
	browse(t, ctx, "sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("form.signout")))
}

// failingHook is a GitLab merge request posted as an issue hook: its
// delivery fails at once (the payload contradicts its event header), and
// again whenever it is replayed.
func failingHook(t *testing.T) hook {
	return hook{Conn: "gitlab", Event: "Issue Hook", Body: readFixture(t, "gitlab/merge_request.json")}
}

// An operator signs in, finds the failed delivery through the filters,
// opens it, replays it, and sees its new status.
func TestConsoleBrowserReplaysAFailedDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := newBrowser(t)
		g := startGateway(t, newDatabaseURL(t, dialect))
		g.process(t, fixtureHook(t, "github/issues.opened.json"))
		failed := g.process(t, failingHook(t))
		if failed.Status != "failed" {
			t.Fatalf("the failing hook's delivery is %s, want failed", failed.Status)
		}

		signIn(t, ctx, g, testAdminToken)
		if h := text(t, ctx, "main h1"); h != "Overview" {
			t.Fatalf("after sign-in the page is %q, want the overview", h)
		}
		browse(t, ctx, "filter the failed deliveries",
			chromedp.Click(chromedp.CSS(`a[href="/ui/deliveries"]`)), chromedp.WaitVisible(chromedp.CSS(`select[name="status"]`)),
			chromedp.SetValue(chromedp.CSS(`select[name="status"]`), "failed"),
			chromedp.Submit(chromedp.CSS(`select[name="status"]`)),
			chromedp.WaitVisible(chromedp.CSS(`table.list tbody a[href^="/ui/deliveries/"]`)))
		if loc := location(t, ctx); !strings.Contains(loc, "status=failed") {
			t.Fatalf("the filtered list is at %s, want status=failed in its query", loc)
		}
		rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`table.list tbody tr`)))
		if err != nil || len(rows) != 1 {
			t.Fatalf("the failed deliveries list %d rows (%v), want only the failed one", len(rows), err)
		}
		browse(t, ctx, "open the failed delivery",
			chromedp.Click(chromedp.CSS(`table.list tbody a[href^="/ui/deliveries/"]`)),
			chromedp.WaitVisible(chromedp.CSS(`form[action$="/replay"] button`)))
		if loc := location(t, ctx); loc != g.URL+"/ui/deliveries/"+failed.ID {
			t.Fatalf("opened %s, want the failed delivery %s", loc, failed.ID)
		}
		if got := text(t, ctx, "dl.facts .status"); got != "failed" {
			t.Fatalf("the delivery page shows status %q, want failed", got)
		}
		if got := text(t, ctx, "pre.error-text"); !strings.Contains(got, "does not match X-Gitlab-Event") {
			t.Errorf("the delivery page shows the error %q, want the parse failure", got)
		}

		browse(t, ctx, "replay it", chromedp.Click(chromedp.CSS(`form[action$="/replay"] button`)),
			chromedp.WaitVisible(chromedp.CSS("p.notice")))
		if got := text(t, ctx, "p.notice"); got != "Delivery queued for replay." {
			t.Errorf("after the replay the notice is %q", got)
		}
		// The replay runs the delivery again: it is queued (or already
		// taken) and then fails again, as its payload still contradicts
		// its header. The gateway counts its second final outcome.
		if got := text(t, ctx, "dl.facts .status"); got != "queued" && got != "processing" && got != "failed" {
			t.Errorf("right after the replay the status is %q, want queued, processing or failed", got)
		}
		poll(t, "the replayed delivery's second outcome", waitTimeout, func() bool {
			m := findMetric(g.scrape(t), "gateway_delivery_processing_seconds", map[string]string{"connection": "gitlab"})
			return histogramCountAtLeast(2)(m)
		})
		browse(t, ctx, "reload the delivery", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("dl.facts .status")))
		if got := text(t, ctx, "dl.facts .status"); got != "failed" {
			t.Errorf("once processed again the status is %q, want failed", got)
		}
	})
}

// An operator finds a delivery GitHub failed to make, reads the dry run,
// confirms it, and sees it asked for once; the redelivery arrives and
// makes its task.
func TestConsoleBrowserRecoversAMissedDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := newBrowser(t)
		api := newMissedGitHub(t)
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", recoverConfig(t, api.srv.URL, ""))
		api.mu.Lock()
		api.gateway = g.URL
		api.mu.Unlock()
		api.add(2, "guid-missed", 503, githubIssueOpened(t, 7002, 2, "Missed while the gateway was down"))
		api.add(3, "guid-ok", 200, githubIssueOpened(t, 7003, 3, "Delivered"))
		asked := func() int {
			api.mu.Lock()
			defer api.mu.Unlock()
			return api.asked
		}

		signIn(t, ctx, g, testAdminToken)
		browse(t, ctx, "open the missed deliveries", chromedp.Click(chromedp.CSS(`a[href="/ui/recover"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#recover-github form.recover-form button`)))
		if got := text(t, ctx, "#recover-github tr.hook-off"); !strings.Contains(got, "switched off") || !strings.Contains(got, "503 failed") {
			t.Errorf("the switched-off hook's row says %q, want it marked off with its last response", got)
		}
		if got := text(t, ctx, "#recover-gitlab"); !strings.Contains(got, "it has no api_token and no hooks") {
			t.Errorf("the gitlab connection's section says %q, want why it cannot be recovered", got)
		}
		browse(t, ctx, "run the dry run",
			chromedp.SetValue(chromedp.CSS(`#recover-github input[name="since"]`), "1h"),
			chromedp.Click(chromedp.CSS(`#recover-github form.recover-form button`)),
			chromedp.WaitVisible(chromedp.CSS(`#recover-github form.confirm button`)))
		if got := text(t, ctx, "#recover-github section.run p"); got != "2 deliveries checked; 1 missing, of which 1 would be redelivered now." {
			t.Errorf("the dry run says %q", got)
		}
		if n := asked(); n != 0 {
			t.Fatalf("the dry run asked GitHub for %d redeliveries", n)
		}
		browse(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`#recover-github form.confirm button`)),
			chromedp.WaitVisible(chromedp.CSS(`#recover-github .s-accepted`)))
		if got := text(t, ctx, "#recover-github section.run p"); got != "Asked the provider to redeliver 1 delivery; 2 checked, 1 missing." {
			t.Errorf("the confirmation says %q", got)
		}
		if n := asked(); n != 1 {
			t.Errorf("GitHub was asked %d times, want once", n)
		}
		poll(t, "the redelivered issue's task", waitTimeout, func() bool {
			for _, tk := range g.tasks(t) {
				if tk.Title == "Missed while the gateway was down" {
					return true
				}
			}
			return false
		})
	})
}

func TestConsoleBrowserWrongTokenStaysOnSignIn(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	g := startGateway(t, newDatabaseURL(t, "sqlite"))
	browse(t, ctx, "sign in with a wrong token", chromedp.Navigate(g.URL+"/ui/login"),
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token-0123456789"), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	if got := text(t, ctx, "p.error"); got != "That token is not valid." {
		t.Errorf("the sign-in error is %q", got)
	}
	if loc := location(t, ctx); loc != g.URL+"/ui/login" {
		t.Errorf("after a wrong token the browser is at %s, want the sign-in form", loc)
	}
	browse(t, ctx, "open the overview", chromedp.Navigate(g.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := location(t, ctx); loc != g.URL+"/ui/login" {
		t.Errorf("the overview after a wrong token is at %s, want the sign-in form", loc)
	}
}

// A workspace token sees its workspace's tasks and no other's.
func TestConsoleBrowserWorkspaceTokenSeesItsTasksOnly(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		ctx := newBrowser(t)
		cfg := filepath.Join(t.TempDir(), "gateway.yaml")
		config := strings.Replace(testConfig, "connections:", `  - id: ops
    name: Operations
    task_prefix: OPS
    steps:
      - {id: backlog, name: Backlog}
tokens:
  - {name: eng-bot, token: `+engBotToken+`, workspaces: [eng]}
connections:`, 1)
		if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		g := startGateway(t, newDatabaseURL(t, dialect), "--config", cfg)
		g.process(t, fixtureHook(t, "github/issues.opened.json"))
		if status, body := g.apiDo(t, http.MethodPost, "/api/v1/tasks", map[string]any{"workspace_id": "ops", "title": "Rotate the pager"}); status != http.StatusOK && status != http.StatusCreated {
			t.Fatalf("create the ops task = %d %s", status, body)
		}

		signIn(t, ctx, g, engBotToken)
		links, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`a[href^="/ui/workspaces/"]`)))
		if err != nil || len(links) != 1 || links[0].AttributeValue("href") != "/ui/workspaces/eng/tasks" {
			t.Fatalf("the overview links %d workspaces (%v), want eng's only", len(links), err)
		}
		if n, _ := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`a[href="/ui/deliveries"]`), chromedp.AtLeast(0))); len(n) != 0 {
			t.Errorf("a workspace token's navigation links the deliveries")
		}
		browse(t, ctx, "open eng's tasks", chromedp.Click(chromedp.CSS(`a[href="/ui/workspaces/eng/tasks"]`)),
			chromedp.WaitVisible(chromedp.CSS("article.task")))
		if got := text(t, ctx, "main"); !strings.Contains(got, "Spelling error in the README file") || strings.Contains(got, "Rotate the pager") {
			t.Errorf("eng's tasks page shows:\n%s\nwant the GitHub issue's task and not ops's", got)
		}
		browse(t, ctx, "open ops's tasks", chromedp.Navigate(g.URL+"/ui/workspaces/ops/tasks"), chromedp.WaitVisible(chromedp.CSS("main h1")))
		if got := text(t, ctx, "main"); !strings.Contains(got, "404 Not Found") || strings.Contains(got, "Rotate the pager") {
			t.Errorf("ops's tasks with eng's token show:\n%s\nwant a 404", got)
		}
	})
}

// A form forged without the CSRF token (here built by a script in the
// signed-in page) is refused, and changes nothing.
func TestConsoleBrowserForgedFormIsRefused(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	g := startGateway(t, newDatabaseURL(t, "sqlite"))
	failed := g.process(t, failingHook(t))
	signIn(t, ctx, g, testAdminToken)
	forge := `(() => { const f = document.createElement("form"); f.method = "post";
		f.action = "/ui/deliveries/` + failed.ID + `/replay"; document.body.appendChild(f); f.submit(); return true; })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](forge)); err != nil {
		t.Fatalf("submit the forged form: %v", err)
	}
	poll(t, "the forged form's answer", waitTimeout, func() bool {
		h, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main h1")))
		return err == nil && strings.Contains(h, "403")
	})
	if d := g.getDelivery(t, failed.ID); d.Status != "failed" {
		t.Errorf("after the forged replay the delivery is %s, want still failed", d.Status)
	}
}
