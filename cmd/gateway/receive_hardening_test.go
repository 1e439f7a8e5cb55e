package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trackergateway/gateway/connectors"
)

// linearIssueCreate is the stored Linear issue create with data.id set to
// id, written into the body as it is (raw bytes, escapes), and a fresh
// webhookTimestamp: Restamp would refuse a body whose text is not valid.
func linearIssueCreate(t *testing.T, id string) []byte {
	t.Helper()
	body := readFixture(t, "linear/issue.create.json")
	const fixtureID = `"539068e2-ae88-4d09-bd75-22eb4a59612f"`
	if bytes.Count(body, []byte(fixtureID)) != 1 {
		t.Fatalf("the fixture's issue ID is not where it was")
	}
	body = bytes.Replace(body, []byte(fixtureID), []byte(`"`+id+`"`), 1)
	var m struct {
		Stamp json.Number `json:"webhookTimestamp"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Stamp == "" {
		t.Fatalf("fixture timestamp: %v", err)
	}
	return bytes.Replace(body, []byte(`"webhookTimestamp": `+m.Stamp.String()), []byte(`"webhookTimestamp": `+strconv.FormatInt(time.Now().UnixMilli(), 10)), 1)
}

// postSigned signs body for conn as its provider would and posts it.
func (g *gateway) postSigned(t *testing.T, conn string, body []byte, edit func(h http.Header)) (int, []byte) {
	t.Helper()
	h := hook{Conn: conn, Event: "issues", Body: body}.header(secretsByConn[conn])
	if edit != nil {
		edit(h)
	}
	status, out, err := g.postWebhook(conn, h, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, out
}

// TestReceiveHardeningEndToEnd, on both databases: issues whose IDs differ
// only in text that is not valid UTF-8 stay apart (each delivery fails at
// once naming data.id, no task is made of either, and reading the delivery
// is strict JSON); an ID validation refuses fails at the first attempt;
// another provider's delivery and one missing its event header are refused
// at the door; a pull request's first delivery that is not its opening
// still makes its task.
func TestReceiveHardeningEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))

		t.Run("IDs differing in invalid text stay apart", func(t *testing.T) {
			for _, pair := range [][2]string{{"coll-\xff", "coll-\xfe"}, {`coll-\ud800`, `coll-\udc00`}} {
				for _, id := range pair {
					status, out := g.postSigned(t, "linear", linearIssueCreate(t, id), nil)
					if status != http.StatusAccepted {
						t.Fatalf("POST = %d %s, want 202", status, out)
					}
					var r receipt
					if err := json.Unmarshal(out, &r); err != nil {
						t.Fatal(err)
					}
					d := g.waitDelivery(t, r.DeliveryID)
					if d.Status != "failed" || d.Attempts != 1 || !strings.Contains(str(d.LastError), "data.id is not valid UTF-8 text") {
						t.Errorf("data.id %q: delivery %s after %d attempts (%s), want failed at once naming data.id",
							id, d.Status, d.Attempts, str(d.LastError))
					}
					_, raw := g.apiDo(t, http.MethodGet, "/api/v1/deliveries/"+r.DeliveryID, nil)
					if !jsontext.Value(raw).IsValid(jsontext.AllowDuplicateNames(true)) {
						t.Errorf("GET delivery of data.id %q is not strict JSON: %q", id, raw)
					}
					var detail struct {
						Body         json.RawMessage `json:"body"`
						BodyEncoding string          `json:"body_encoding"`
					}
					_ = json.Unmarshal(raw, &detail)
					if raw := strings.Contains(id, "\\u"); raw == (detail.BodyEncoding == "base64") {
						t.Errorf("data.id %q: body_encoding %q", id, detail.BodyEncoding)
					}
					if detail.BodyEncoding == "base64" {
						var s string
						_ = json.Unmarshal(detail.Body, &s)
						if b, err := base64.StdEncoding.DecodeString(s); err != nil || !bytes.Contains(b, []byte(id)) {
							t.Errorf("base64 body does not hold the bytes sent (%v)", err)
						}
					}
				}
			}
			if tasks := g.tasks(t); len(tasks) != 0 {
				t.Fatalf("tasks = %+v, want none", tasks)
			}
		})

		t.Run("validation errors fail at the first attempt", func(t *testing.T) {
			for _, tc := range []struct{ id, want string }{
				{`a\u0000b`, "data.id contains a control character"},
				{strings.Repeat("x", 300), "at most 255 are allowed"},
			} {
				status, out := g.postSigned(t, "linear", linearIssueCreate(t, tc.id), nil)
				if status != http.StatusAccepted {
					t.Fatalf("POST = %d %s, want 202", status, out)
				}
				var r receipt
				_ = json.Unmarshal(out, &r)
				d := g.waitDelivery(t, r.DeliveryID)
				if d.Status != "failed" || d.Attempts != 1 || !strings.Contains(str(d.LastError), tc.want) {
					t.Errorf("data.id %.20q: delivery %s after %d attempts (%s), want failed at once: %s",
						tc.id, d.Status, d.Attempts, str(d.LastError), tc.want)
				}
			}
		})

		before := len(g.deliveries(t))
		t.Run("a Gitea hook on a GitHub connection", func(t *testing.T) {
			body := readFixture(t, "gitea/issues.opened.json")
			status, out := g.postSigned(t, "github", body, func(h http.Header) {
				// What Gitea sends beside its own headers, signed as GitHub
				// would verify.
				h.Set("X-Gitea-Event", "issues")
				h.Set("X-Gitea-Delivery", connectors.NewUUID())
				h.Set("X-Gitea-Signature", connectors.HMACSHA256Hex([]byte(githubSecret), body))
			})
			want := `{"error":"this delivery comes from Gitea (X-Gitea-Event); a connection for it needs provider: gitea"}`
			if status != http.StatusBadRequest || strings.TrimSpace(string(out)) != want {
				t.Errorf("POST = %d %s, want 400 %s", status, out, want)
			}
		})
		t.Run("a signed GitHub delivery without X-GitHub-Event", func(t *testing.T) {
			body := readFixture(t, "github/issues.opened.json")
			status, out := g.postSigned(t, "github", body, func(h http.Header) { h.Del("X-GitHub-Event") })
			want := `{"error":"missing X-GitHub-Event header: every GitHub delivery carries it"}`
			if status != http.StatusBadRequest || strings.TrimSpace(string(out)) != want {
				t.Errorf("POST = %d %s, want 400 %s", status, out, want)
			}
		})
		if after := len(g.deliveries(t)); after != before {
			t.Errorf("deliveries %d → %d: a refused request was stored", before, after)
		}

		t.Run("a pull request first seen assigned", func(t *testing.T) {
			body := mutate(t, readFixture(t, "github/pull_request.opened.json"), func(m map[string]any) { m["action"] = "assigned" })
			d := g.process(t, hook{Conn: "github", Event: "pull_request", Body: body})
			if d.Status != "succeeded" || d.action() != "create" {
				t.Errorf("pull_request.assigned = %s/%s (%s), want succeeded/create", d.Status, d.action(), str(d.LastError))
			}
		})
	})
}
