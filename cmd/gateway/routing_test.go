package main

// Unknown paths and unserved methods answer JSON, like every other error.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantError  string
		wantAllow  string // for 405
	}{
		{"unknown path", http.MethodGet, "/nope", http.StatusNotFound, "not found", ""},
		{"unknown api path", http.MethodGet, "/api/v1/nope", http.StatusNotFound, "not found", ""},
		{"unknown path under a route", http.MethodGet, "/api/v1/tasks/x/nope", http.StatusNotFound, "not found", ""},
		{"unknown webhook path", http.MethodPost, "/webhooks/github/extra", http.StatusNotFound, "not found", ""},
		{"webhook with GET", http.MethodGet, "/webhooks/x", http.StatusMethodNotAllowed, "method not allowed", "POST"},
		{"health with POST", http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "method not allowed", "GET"},
		{"task with PUT", http.MethodPut, "/api/v1/tasks/some-id", http.StatusMethodNotAllowed, "method not allowed", "DELETE, GET, PATCH"},
		{"workspaces with DELETE", http.MethodDelete, "/api/v1/workspaces", http.StatusMethodNotAllowed, "method not allowed", "GET, POST"},
		{"operator route with POST", http.MethodPost, "/api/v1/deliveries/some-id", http.StatusMethodNotAllowed, "method not allowed", "GET"},
	}
	forEachDialect(t, func(t *testing.T, dialect string) {
		g := startGateway(t, newDatabaseURL(t, dialect))
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := http.NewRequest(tt.method, g.URL+tt.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testAdminToken)
				resp, err := g.client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", tt.method, tt.path, err)
				}
				defer resp.Body.Close()
				var body struct {
					Error string `json:"error"`
				}
				decodeErr := json.NewDecoder(resp.Body).Decode(&body)
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("%s %s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.wantStatus)
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type = %q, want application/json", ct)
				}
				if decodeErr != nil || body.Error != tt.wantError {
					t.Errorf("body error = %q (decode: %v), want %q", body.Error, decodeErr, tt.wantError)
				}
				if got := resp.Header.Get("Allow"); got != tt.wantAllow {
					t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
				}
			})
		}
	})
}
