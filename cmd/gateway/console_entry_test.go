package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A new user finds the console from what serve prints and logs at start-up
// (its address, with /ui/) and from the gateway's bare address, which
// redirects to it.
func TestStartupNamesTheConsole(t *testing.T) {
	t.Parallel()
	printed := serveUntilListening(t, newDatabaseURL(t, "sqlite"), noEnv)
	line := strings.TrimSpace(printed[strings.LastIndex(strings.TrimSpace(printed), "\n")+1:])
	url, ok := listeningAddr(line)
	if !ok || !strings.HasSuffix(line, "; operator console: "+url+"/ui/") {
		t.Errorf("listening line %q, want it to end with the console's address %s/ui/", line, url)
	}

	g := startGateway(t, newDatabaseURL(t, "sqlite"))
	// The log line follows the printed one: wait for it.
	var started map[string]any
	for deadline := time.Now().Add(waitTimeout); started == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(g.logs.String(), "\n") {
			var entry map[string]any
			if json.Unmarshal([]byte(l), &entry) == nil && entry["msg"] == "gateway started" {
				started = entry
			}
		}
	}
	if started["console"] != g.URL+"/ui/" {
		t.Errorf("start-up log line %v, want console %s/ui/", started, g.URL)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(g.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %d Location %q, want 302 to /ui/", res.StatusCode, res.Header.Get("Location"))
	}
}
