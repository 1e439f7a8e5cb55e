package inbox

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trackergateway/gateway/connectors"
	"github.com/trackergateway/gateway/connectors/providers"
	"github.com/trackergateway/gateway/internal/store/sqlstore"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// providerBody is a body every provider's receive path takes (Linear's
// signed timestamp is set when the request is built).
const providerBody = `{"action":"opened","webhookTimestamp":0}`

// providerRequest is a delivery as provider sends it to conn: its own
// headers (Gitea's include GitHub's, with a GitHub signature that verifies
// under the same secret), signed with secret by its adapter; edit, when
// set, changes the headers after signing.
func providerRequest(t *testing.T, provider, conn, secret string, edit func(h http.Header)) *http.Request {
	t.Helper()
	adapter := providers.Adapters()[provider]
	body := []byte(providerBody)
	if r, ok := adapter.(connectors.Restamper); ok {
		var err error
		if body, err = r.Restamp(body, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/webhooks/"+conn, bytes.NewReader(body))
	h := req.Header
	switch provider {
	case connectors.ProviderGitHub:
		h.Set("X-GitHub-Event", "issues")
		h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		h.Set("X-GitHub-Hook-ID", "1")
	case connectors.ProviderGitLab:
		h.Set("X-Gitlab-Event", "Issue Hook")
		h.Set("Idempotency-Key", "f1e3c0b6-2b8a-4f5e-9d0c-0a1b2c3d4e5f")
	case connectors.ProviderJira:
		h.Set("X-Atlassian-Webhook-Identifier", "1-2-3")
	case connectors.ProviderGitea:
		h.Set("X-Gitea-Event", "issues")
		h.Set("X-Gitea-Delivery", "5c4e8d1a-0b1f-4c2e-9f3a-2d6b7c8e9f01")
		h.Set("X-Gogs-Event", "issues")
		h.Set("X-GitHub-Event", "issues")
		h.Set("X-GitHub-Delivery", "5c4e8d1a-0b1f-4c2e-9f3a-2d6b7c8e9f01")
		h.Set("X-Hub-Signature-256", "sha256="+connectors.HMACSHA256Hex([]byte(secret), body))
	case connectors.ProviderLinear:
		h.Set("Linear-Event", "Issue")
		h.Set("Linear-Delivery", "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a")
	}
	adapter.Sign(h, body, []byte(secret))
	if edit != nil {
		edit(h)
	}
	return req
}

var connByProvider = map[string]string{
	connectors.ProviderGitHub: connGitHub, connectors.ProviderGitLab: connGitLab, connectors.ProviderJira: connJira,
	connectors.ProviderGitea: connGitea, connectors.ProviderLinear: connLinear,
}

// TestReceiveAnotherProvidersDelivery: a delivery whose headers name
// another provider than the connection's is refused with 400 naming that
// provider and the provider: to configure, before the content type, the
// body and the signature are looked at, and nothing is stored; one that
// names its own provider is accepted, Gitea's although it carries GitHub's
// headers too.
func TestReceiveAnotherProvidersDelivery(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, providers.Adapters(), nil, ReceiverOptions{})
		titles := map[string]string{"github": "GitHub (X-GitHub-Event)", "gitlab": "GitLab (X-Gitlab-Event)",
			"jira": "Jira (X-Atlassian-Webhook-Identifier)", "gitea": "Gitea (X-Gitea-Event)", "linear": "Linear (Linear-Event)"}
		for _, from := range providers.Names() {
			for _, to := range providers.Names() {
				t.Run(from+" to "+to, func(t *testing.T) {
					rec := serve(h, providerRequest(t, from, connByProvider[to], secretCurrent, nil))
					if from == to {
						if rec.Code != http.StatusAccepted {
							t.Fatalf("status = %d %s, want 202", rec.Code, rec.Body)
						}
						return
					}
					want := "this delivery comes from " + titles[from] + "; a connection for it needs provider: " + from
					if rec.Code != http.StatusBadRequest || errorMessage(t, rec) != want {
						t.Fatalf("answer = %d %s, want 400 %q", rec.Code, rec.Body, want)
					}
				})
			}
		}
		// Refused on its headers alone: a signature that cannot verify, a
		// content type the connection never takes, a Forgejo delivery.
		for name, edit := range map[string]func(h http.Header){
			"wrong signature":   func(h http.Header) { h.Set("X-Gitea-Signature", strings.Repeat("0", 64)) },
			"unsigned":          func(h http.Header) { h.Del("X-Gitea-Signature"); h.Del("X-Hub-Signature-256") },
			"form content type": func(h http.Header) { h.Set("Content-Type", "multipart/form-data; boundary=x") },
			"forgejo": func(h http.Header) {
				h.Del("X-Gitea-Event")
				h.Del("X-Gogs-Event")
				h.Set("X-Forgejo-Event", "issues")
			},
		} {
			t.Run("gitea to github, "+name, func(t *testing.T) {
				rec := serve(h, providerRequest(t, connectors.ProviderGitea, connGitHub, secretCurrent, edit))
				if rec.Code != http.StatusBadRequest || !strings.Contains(errorMessage(t, rec), "needs provider: gitea") {
					t.Fatalf("answer = %d %s, want 400 naming provider: gitea", rec.Code, rec.Body)
				}
			})
		}
		if got := countDeliveries(t, st, connGitHub); got != 1 {
			t.Errorf("github deliveries stored = %d, want only its own", got)
		}
	})
}

// TestReceiveMissingRequiredHeader: a signed delivery without a header
// its provider always sends is refused with 400 naming it (GitHub's
// X-GitHub-Event: the worker could never process it); headers a provider
// may leave out fall back as documented; an unsigned request is a 401
// first.
func TestReceiveMissingRequiredHeader(t *testing.T) {
	t.Parallel()
	storetest.ForEachDialect(t, func(t *testing.T, st *sqlstore.Store) {
		_, h := startReceiver(t, st, providers.Adapters(), nil, ReceiverOptions{})
		tests := []struct {
			provider, drop string
			wantCode       int
			wantError      string
		}{
			{"github", "X-GitHub-Event", 400, "missing X-GitHub-Event header: every GitHub delivery carries it"},
			{"github", "X-GitHub-Delivery", 400, "missing X-GitHub-Delivery header: every GitHub delivery carries it"},
			{"gitlab", "X-Gitlab-Event", 400, "missing X-Gitlab-Event header: every GitLab delivery carries it"},
			{"gitea", "X-Gitea-Event", 400, "missing X-Gitea-Event or X-Forgejo-Event header: every Gitea delivery carries it"},
			{"gitea", "X-Gitea-Delivery", 400, "missing X-Gitea-Delivery or X-Forgejo-Delivery header: every Gitea delivery carries it"},
			// Documented fallbacks: the body's hash keys the delivery, the
			// body names the event.
			{"gitlab", "Idempotency-Key", 202, ""},
			{"jira", "X-Atlassian-Webhook-Identifier", 202, ""},
			{"linear", "Linear-Delivery", 202, ""},
			{"linear", "Linear-Event", 202, ""},
		}
		for _, tt := range tests {
			t.Run(tt.provider+" without "+tt.drop, func(t *testing.T) {
				req := providerRequest(t, tt.provider, connByProvider[tt.provider], secretCurrent, func(h http.Header) { h.Del(tt.drop) })
				rec := serve(h, req)
				if rec.Code != tt.wantCode {
					t.Fatalf("status = %d %s, want %d", rec.Code, rec.Body, tt.wantCode)
				}
				if tt.wantError != "" && errorMessage(t, rec) != tt.wantError {
					t.Fatalf("error = %q, want %q", errorMessage(t, rec), tt.wantError)
				}
			})
		}
		t.Run("unsigned github without X-GitHub-Event", func(t *testing.T) {
			rec := serve(h, providerRequest(t, "github", connGitHub, secretCurrent, func(h http.Header) {
				h.Del("X-GitHub-Event")
				h.Del("X-Hub-Signature-256")
			}))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d %s, want 401", rec.Code, rec.Body)
			}
		})
		if got := countDeliveries(t, st, connGitHub); got != 0 {
			t.Errorf("github deliveries stored = %d, want 0", got)
		}
	})
}

// TestReceiveSignatureReasons: a 401 names why (the header missing, a
// mismatch, an unsupported method, Linear's timestamp missing or outside
// the window), and never a secret, the expected signature or the one
// received.
func TestReceiveSignatureReasons(t *testing.T) {
	t.Parallel()
	_, h := startReceiver(t, failingWriter{}, providers.Adapters(), nil, ReceiverOptions{})
	wrong := strings.Repeat("ab", 32)
	tests := []struct {
		name, provider string
		edit           func(h http.Header)
		body           string // replaces the signed body when set (Linear's timestamp)
		want           string
	}{
		{"github unsigned", "github", func(h http.Header) { h.Del("X-Hub-Signature-256") }, "",
			"missing signature: no X-Hub-Signature-256 header"},
		{"github mismatch", "github", func(h http.Header) { h.Set("X-Hub-Signature-256", "sha256="+wrong) }, "",
			"signature mismatch: X-Hub-Signature-256 does not match the body under the connection's secrets"},
		{"github SHA-1 only", "github", func(h http.Header) {
			h.Del("X-Hub-Signature-256")
			h.Set("X-Hub-Signature", "sha1="+wrong[:40])
		}, "", "unsupported signature: X-Hub-Signature (SHA-1) is not accepted; X-Hub-Signature-256 is required"},
		{"gitlab wrong token", "gitlab", func(h http.Header) { h.Set("X-Gitlab-Token", "guess") }, "",
			"signature mismatch: X-Gitlab-Token does not match the body under the connection's secrets"},
		{"gitea unsigned", "gitea", func(h http.Header) { h.Del("X-Gitea-Signature"); h.Del("X-Hub-Signature-256") }, "",
			"missing signature: no X-Gitea-Signature or X-Forgejo-Signature header"},
		{"gitea forged second value", "gitea", func(h http.Header) { h.Add("X-Gitea-Signature", wrong) }, "",
			"signature mismatch: X-Gitea-Signature does not match the body under the connection's secrets"},
		{"jira mismatch", "jira", func(h http.Header) { h.Set("X-Hub-Signature", "sha256="+wrong) }, "",
			"signature mismatch: X-Hub-Signature does not match the body under the connection's secrets"},
		{"linear stale", "linear", nil, `{"type":"Issue","webhookTimestamp":1000}`,
			"timestamp outside the window: webhookTimestamp is more than 1m0s from the gateway's clock"},
		{"linear no timestamp", "linear", nil, `{"type":"Issue"}`,
			"missing timestamp: the signed body has no numeric webhookTimestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := providerRequest(t, tt.provider, connByProvider[tt.provider], secretCurrent, tt.edit)
			var sent string
			if tt.body != "" {
				req = httptest.NewRequest(http.MethodPost, req.URL.Path, strings.NewReader(tt.body))
				providerRequestHeaders(req.Header, tt.provider)
				sent = connectors.HMACSHA256Hex([]byte(secretCurrent), []byte(tt.body))
				req.Header.Set("Linear-Signature", sent)
			}
			for _, v := range req.Header {
				for _, s := range v {
					if strings.Contains(s, wrong) || len(s) == 64 {
						sent = s
					}
				}
			}
			rec := serve(h, req)
			if rec.Code != http.StatusUnauthorized || errorMessage(t, rec) != tt.want {
				t.Fatalf("answer = %d %s, want 401 %q", rec.Code, rec.Body, tt.want)
			}
			for _, secretish := range []string{secretCurrent, "guess", wrong, sent} {
				if secretish != "" && strings.Contains(rec.Body.String(), secretish) {
					t.Fatalf("401 body %s shows %q", rec.Body, secretish)
				}
			}
		})
	}
}

// providerRequestHeaders sets Linear's headers on h, for a body signed by
// hand.
func providerRequestHeaders(h http.Header, provider string) {
	h.Set("Content-Type", "application/json")
	if provider == connectors.ProviderLinear {
		h.Set("Linear-Event", "Issue")
		h.Set("Linear-Delivery", "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a")
	}
}
