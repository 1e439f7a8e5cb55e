package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/trackergateway/gateway/connectors/github"
	"github.com/trackergateway/gateway/internal/inbox"
)

// The ceiling answers as the gateway does: 202 with a receipt for a signed
// delivery (keyed by the body's hash when it has no delivery header), 401
// for a bad signature.
func TestCeilingHandler(t *testing.T) {
	t.Parallel()
	body := []byte(`{"action":"opened"}`)
	tests := []struct {
		name     string
		secret   string
		delivery string
		want     int
	}{
		{"signed", secret, "d-1", http.StatusAccepted},
		{"wrong secret", "another-secret", "d-2", http.StatusUnauthorized},
		{"no delivery header", secret, "", http.StatusAccepted},
	}
	h := ceilingHandler{secrets: [][]byte{[]byte(secret)}}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/gh", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(github.HeaderEvent, "issues")
		if tt.delivery != "" {
			req.Header.Set(github.HeaderDelivery, tt.delivery)
		}
		github.Adapter{}.Sign(req.Header, body, []byte(tt.secret))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s: status = %d, want %d", tt.name, rec.Code, tt.want)
			continue
		}
		if tt.want != http.StatusAccepted {
			continue
		}
		var r inbox.ReceiptResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.DeliveryID == "" || r.Status != inbox.ReceiptAccepted {
			t.Errorf("%s: body %q (%v), want a receipt with a delivery id and status accepted", tt.name, rec.Body.String(), err)
		}
	}
}
