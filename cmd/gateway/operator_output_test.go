package main

// The operator commands print a table by default and the API's JSON with
// -o json; suppressions clear and replay say what they did.

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

var spaces = regexp.MustCompile(` {2,}`)

func TestOperatorCLITables(t *testing.T) {
	t.Parallel()
	const failed = `{"id":"d-1","connection":"gh","provider":"github","event":"issues.opened","delivery_key":"k-1","status":"failed",
		"attempts":8,"last_error":"apply: workspace eng\nhas no step \"doing\"","next_attempt_at":null,"received_at":"2026-03-04T05:06:07.123Z",
		"outcome":{"task_id":"t-1","external_id":"github:github.com:issue:7","action":"create","result":"error"}}`
	tests := []struct {
		name   string
		args   []string
		answer string
		want   []string
	}{
		{"list", []string{"deliveries", "list", "--status", "failed"}, `{"deliveries":[` + failed + `],"next_cursor":"c2"}`, []string{
			"ID  ", "RECEIVED (UTC)", "LAST ERROR",
			"d-1", "2026-03-04 05:06:07", "gh", "issues.opened", "failed", "8", "create", "github:github.com:issue:7",
			`apply: workspace eng has no step "doing"`, // one line
			"more: add --cursor c2",
		}},
		// A resend that changed nothing succeeded without applying its
		// action: the recorded result says so.
		{"list shows each outcome's result", []string{"deliveries", "list"}, `{"deliveries":[` +
			`{"id":"d-2","connection":"gh","provider":"github","event":"issues.opened","delivery_key":"k-2","status":"succeeded","attempts":1,` +
			`"last_error":null,"next_attempt_at":null,"received_at":"2026-03-04T05:06:08Z",` +
			`"outcome":{"task_id":"t-1","external_id":"github:github.com:issue:7","action":"update","result":"unchanged (the task already has this state)"}},` +
			`{"id":"d-3","connection":"gh","provider":"github","event":"issues.edited","delivery_key":"k-3","status":"succeeded","attempts":1,` +
			`"last_error":null,"next_attempt_at":null,"received_at":"2026-03-04T05:06:09Z",` +
			`"outcome":{"task_id":"t-1","external_id":"github:github.com:issue:7","action":"update","result":"stale update skipped (older than the last applied event)"}}]}`,
			[]string{"ACTION RESULT EXTERNAL ID",
				"d-2 2026-03-04 05:06:08 gh issues.opened succeeded 1 update unchanged (the task already has this state) github:github.com:issue:7",
				"d-3 2026-03-04 05:06:09 gh issues.edited succeeded 1 update stale update skipped (older than the last applied event) github:github.com:issue:7",
			}},
		{"empty list", []string{"deliveries", "list"}, `{"deliveries":[]}`, []string{"no deliveries match"}},
		{"empty page, more to search", []string{"deliveries", "list", "--error-contains", "x"}, `{"deliveries":[],"next_cursor":"c3"}`,
			[]string{"none matched on this page", "more: add --cursor c3"}},
		{"get", []string{"deliveries", "get", "d-1"},
			`{"id":"d-1","connection":"gh","provider":"github","event":"issues","delivery_key":"k-1","status":"succeeded","attempts":1,
			"last_error":null,"next_attempt_at":null,"received_at":"2026-03-04T05:06:07Z","outcome":{"task_id":"t-1","external_id":"e-1","action":"update","result":"applied"},
			"headers":{"X-Github-Event":["issues"]},"body":{"action":"edited"}}`,
			[]string{"status succeeded", "connection gh (github)", "task t-1", "X-Github-Event issues", "body:", `"action": "edited"`}},
		{"get a text body", []string{"deliveries", "get", "d-2"},
			`{"id":"d-2","connection":"gh","provider":"github","event":"","delivery_key":"k","status":"failed","attempts":1,
			"last_error":"x","next_attempt_at":null,"received_at":"2026-03-04T05:06:07Z","outcome":null,"headers":{},"body":"not json\tat all"}`,
			[]string{"body:\nnot json at all\n"}},
		{"replay one", []string{"deliveries", "replay", "d-1"},
			`{"id":"d-1","connection":"gh","provider":"github","event":"issues","delivery_key":"k","status":"queued","attempts":0,"last_error":null,"next_attempt_at":null,"received_at":"2026-03-04T05:06:07Z","outcome":null}`,
			[]string{"delivery d-1 (gh, issues) is queued again"}},
		{"bulk replay", []string{"deliveries", "replay", "--status", "failed"}, `{"matched":3,"replayed":2,"skipped":1,"deliveries":[` + failed + `]}`,
			[]string{"3 matched: 2 replayed (queued again), 1 skipped (still in progress)", "the first 1 matched, as they are now:", "d-1"}},
		{"bulk dry run", []string{"deliveries", "replay", "--status", "failed", "--dry-run"}, `{"matched":3,"would_replay":3,"skipped":1,"deliveries":[]}`,
			[]string{"dry run, nothing changed: 3 matched; would replay 3, would skip 1 (still in progress)"}},
		{"suppressions", []string{"suppressions", "list"},
			`{"suppressions":[{"workspace_id":"eng","external_id":"jira:x.atlassian.net:issue:1","task_id":"t-9","reason":"task deleted","created_at":"2026-03-04T05:06:07Z"}]}`,
			[]string{"WORKSPACE", "eng", "jira:x.atlassian.net:issue:1", "2026-03-04 05:06:07", "task deleted", "t-9"}},
		{"recover stopped early", []string{"recover", "--connection", "gh"},
			`{"checked":2,"missing":1,"redelivered":1,"deliveries":[{"guid":"g-1","hook_id":11,"delivery_id":5,"event":"issues","action":"opened",
			"delivered_at":"2026-03-04T05:06:07Z","status_code":503,"redelivered":true,"request":"accepted"}],
			"unfinished":[{"hook":"repository acme/api hook 11","hook_id":11,"reason":"repeated_cursor","error":"list deliveries: the provider gave a next page read already (after 2 pages)"}]}`,
			[]string{"checked 2, missing 1, redelivered 1", "g-1", "NOT FINISHED HOOK ID REASON ERROR",
				"repository acme/api hook 11 11 repeated_cursor list deliveries: the provider gave a next page read already (after 2 pages)",
				"run it again, or with a shorter --since, for the rest"}},
		{"recover stopped early as JSON", []string{"recover", "--connection", "gh", "-o", "json"},
			`{"checked":0,"missing":0,"redelivered":0,"deliveries":[],"unfinished":[{"hook":"repository acme/api hook 11","hook_id":11,"reason":"deadline","error":"the run's 45s were up"}]}`,
			[]string{`"reason": "deadline"`, `"hook_id": 11`}},
		{"no suppressions", []string{"suppressions", "list"}, `{"suppressions":[]}`, []string{"no suppressions"}},
		{"clear", []string{"suppressions", "clear", "--workspace", "eng", "--external-id", "e-1"}, ``,
			[]string{"cleared the suppression of e-1 in workspace eng: the next delivery for it creates its task again"}},
		{"clear as JSON", []string{"suppressions", "clear", "--workspace", "eng", "--external-id", "e-1", "-o", "json"}, ``,
			[]string{`"cleared": true`, `"external_id": "e-1"`, `"workspace_id": "eng"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := fakeOperatorAPI(t, tt.answer)
			code, out, errOut := runCLI(t, append(tt.args, "--url", srv.URL, "--admin-token", "tok")...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			// Column widths aside: runs of spaces compare as one.
			squeeze := func(s string) string { return spaces.ReplaceAllString(s, " ") }
			for _, w := range tt.want {
				if !strings.Contains(squeeze(out), squeeze(w)) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestOperatorCLIErrors: -o takes table or json only, and a refusal by the
// API is an error on stderr that carries the API's message.
func TestOperatorCLIErrors(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "deliveries", "list", "-o", "yaml", "--admin-token", "tok")
	if code != 2 || out != "" || !strings.Contains(errOut, `-o "yaml": must be table or json`) {
		t.Errorf("-o yaml: exit %d stdout %q stderr %q, want 2 and the reason", code, out, errOut)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"suppression not found"}`))
	}))
	t.Cleanup(srv.Close)
	code, out, errOut = runCLI(t, "suppressions", "clear", "--workspace", "eng", "--external-id", "e-1", "--url", srv.URL, "--admin-token", "tok")
	if code != 1 || out != "" || !strings.Contains(errOut, "gateway answered 404 Not Found: suppression not found") {
		t.Errorf("clear of nothing: exit %d stdout %q stderr %q, want 1 and the API's message", code, out, errOut)
	}
}
