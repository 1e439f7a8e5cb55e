package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trackergateway/gateway/internal/projection"
	"github.com/trackergateway/gateway/internal/retention"
	"github.com/trackergateway/gateway/internal/store"
)

// expiredDatabase is a migrated database holding, as a gateway would
// leave them, deliveries finished long ago and recently, pending ones, and
// outbox events the projection has read. It returns the IDs of the
// deliveries that a pass with the default retention deletes and of those
// it keeps.
func expiredDatabase(t *testing.T, url string) (expired, kept []string) {
	t.Helper()
	ctx := context.Background()
	st, err := openMigrated(ctx, storeFlags{databaseURL: url}, newLogger(os.Stderr, "error"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	rows := []struct {
		status string
		ago    time.Duration
		gone   bool
	}{
		{store.DeliverySucceeded, 8 * 24 * time.Hour, true},
		{store.DeliveryIgnored, 400 * 24 * time.Hour, true},
		{store.DeliverySucceeded, time.Hour, false},
		{store.DeliveryFailed, 31 * 24 * time.Hour, true},
		{store.DeliveryFailed, 8 * 24 * time.Hour, false},
		{store.DeliveryQueued, 400 * 24 * time.Hour, false},
	}
	for i, r := range rows {
		at := now.Add(-r.ago)
		res, err := st.InsertDeliveries(ctx, []store.Delivery{{ConnectionID: "github", Provider: "github", Event: "issues",
			DeliveryKey: uuid.NewString(), Headers: `{}`, Body: []byte(`{}`), ReceivedAt: at}})
		if err != nil {
			t.Fatal(err)
		}
		id := res[0].ID
		if r.gone {
			expired = append(expired, id)
		} else {
			kept = append(kept, id)
		}
		if r.status == store.DeliveryQueued {
			if i != len(rows)-1 {
				t.Fatal("the queued delivery must be made last: the claims would take it")
			}
			continue
		}
		claimed, err := st.ClaimDeliveries(ctx, "w", at, time.Minute, 1)
		if err != nil || len(claimed) != 1 || claimed[0].ID != id {
			t.Fatalf("claim %s: %+v, %v", id, claimed, err)
		}
		d := claimed[0]
		d.Status, d.ProcessedAt, d.NextAttemptAt = r.status, &at, at
		if err := st.FinishDelivery(ctx, d, "w"); err != nil {
			t.Fatal(err)
		}
	}
	var last int64
	for range 2 {
		err := st.InTx(ctx, func(tx store.Queries) error {
			last, err = tx.AppendTaskEvent(ctx, store.TaskEvent{WorkspaceID: "default", TaskID: uuid.NewString(), Revision: 1,
				Type: store.EventTaskCreated, Payload: `{}`, CreatedAt: now.Add(-30 * 24 * time.Hour)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SaveOutboxCursor(ctx, projection.Consumer, last, now); err != nil {
		t.Fatal(err)
	}
	return expired, kept
}

// present reports which of ids the database still holds.
func present(t *testing.T, url string, ids []string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := openStore(ctx, url, newLogger(os.Stderr, "error"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []string
	for _, id := range ids {
		_, err := st.GetDelivery(ctx, id)
		switch {
		case err == nil:
			out = append(out, id)
		case !errors.Is(err, store.ErrNotFound):
			t.Fatal(err)
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	pruneTable = "KIND                  DELETED\ndeliveries_processed  2\ndeliveries_failed     1\nevents                2\noutbound_deliveries   0\n"
	dryTable   = "KIND                  WOULD DELETE\ndeliveries_processed  2\ndeliveries_failed     1\nevents                2\noutbound_deliveries   0\n"
	emptyTable = "KIND                  DELETED\ndeliveries_processed  0\ndeliveries_failed     0\nevents                0\noutbound_deliveries   0\n"
)

// TestPruneCLI: `gateway prune --dry-run` counts and deletes nothing;
// `gateway prune` deletes exactly that, and a second pass finds nothing.
func TestPruneCLI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		url := newDatabaseURL(t, dialect)
		expired, kept := expiredDatabase(t, url)
		all := append(slices.Clone(expired), kept...)
		steps := []struct {
			args     []string
			wantOut  string
			wantLeft []string
		}{
			{[]string{"--dry-run"}, dryTable, all},
			{[]string{"--dry-run", "-o", "json"}, `{"dry_run":true,"deliveries_processed":2,"deliveries_failed":1,"events":2,"outbound_deliveries":0}`, all},
			{nil, pruneTable, kept},
			{nil, emptyTable, kept},
		}
		for _, s := range steps {
			args := append([]string{"prune", "--database-url", url}, s.args...)
			code, out, errOut := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("gateway %v: exit %d, stderr %s", args, code, errOut)
			}
			if strings.HasPrefix(s.wantOut, "{") {
				var got, want any
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("gateway %v printed %q: %v", args, out, err)
				}
				_ = json.Unmarshal([]byte(s.wantOut), &want)
				// Marshalled again, both have their keys sorted.
				if gb, wb := mustJSON(t, got), mustJSON(t, want); gb != wb {
					t.Errorf("gateway %v printed %s, want %s", args, gb, wb)
				}
			} else if out != s.wantOut {
				t.Errorf("gateway %v printed\n%s\nwant\n%s", args, out, s.wantOut)
			}
			if left := present(t, url, all); !slices.Equal(left, s.wantLeft) {
				t.Errorf("after gateway %v the database holds %v, want %v", args, left, s.wantLeft)
			}
		}
	})
}

// TestPruneCLIConfig: the --config file's retention block applies (0
// keeps), and a bad one is refused before anything is deleted.
func TestPruneCLIConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(keep, []byte("retention:\n  processed: 0\n  events: 0\n  failed: 8760h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("retention:\n  processed: 7d\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := newDatabaseURL(t, "sqlite")
	expired, kept := expiredDatabase(t, url)
	all := append(slices.Clone(expired), kept...)
	code, _, errOut := runCLI(t, "prune", "--database-url", url, "--config", bad)
	if code != 1 || !strings.Contains(errOut, `retention.processed: "7d" is not a duration`) {
		t.Errorf("prune with a bad retention block: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := runCLI(t, "prune", "--database-url", url, "--config", keep)
	if code != 0 || out != emptyTable {
		t.Errorf("prune keeping everything: exit %d, stdout\n%s\nstderr %s", code, out, errOut)
	}
	if left := present(t, url, all); !slices.Equal(left, all) {
		t.Errorf("prune keeping everything left %v, want %v", left, all)
	}
}

// TestPruneCLIBusy: while a gateway holds the retention lease, prune
// deletes nothing and says so (exit 1).
func TestPruneCLIBusy(t *testing.T) {
	t.Parallel()
	url := newDatabaseURL(t, "sqlite")
	expired, kept := expiredDatabase(t, url)
	ctx := context.Background()
	st, err := openStore(ctx, url, newLogger(os.Stderr, "error"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ok, err := st.AcquireJobLease(ctx, retention.LeaseName, "a gateway", now, now.Add(time.Hour))
	st.Close()
	if err != nil || !ok {
		t.Fatalf("take the lease: %v, %v", ok, err)
	}
	code, out, errOut := runCLI(t, "prune", "--database-url", url)
	if code != 1 || out != "" || !strings.Contains(errOut, "a gateway is pruning this database right now") {
		t.Errorf("prune under another's lease: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	all := append(slices.Clone(expired), kept...)
	if left := present(t, url, all); !slices.Equal(left, all) {
		t.Errorf("prune under another's lease left %v, want %v", left, all)
	}
}

// TestPruneCLIUsage: -h answers the usage with its flags and an example; a
// command line prune cannot run is a usage error.
func TestPruneCLIUsage(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"-h", "--help"} {
		code, out, errOut := runCLI(t, "prune", h)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: gateway prune") ||
			!strings.Contains(out, "\nexample:\n  gateway prune --dry-run") {
			t.Errorf("prune %s: exit %d, stdout\n%s\nstderr %q", h, code, out, errOut)
		}
		if got, want := listedFlags(out), []string{"config", "database-url", "dry-run", "log-level", "o"}; !slices.Equal(got, want) {
			t.Errorf("prune %s lists flags %v, want %v", h, got, want)
		}
	}
	if code, out, _ := runCLI(t, "help", "prune"); code != 0 || !strings.HasPrefix(out, "usage: gateway prune") {
		t.Errorf("gateway help prune: exit %d, stdout %q", code, out)
	}
	if code, out, _ := runCLI(t, "--help"); code != 0 || !strings.Contains(out, "\n  prune ") {
		t.Errorf("the command list lacks prune:\n%s", out)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"prune", "extra"}, `unexpected argument "extra"`},
		{[]string{"prune", "-o", "yaml"}, `-o "yaml": must be table or json`},
		{[]string{"prune", "--listen", "127.0.0.1:0"}, "flag provided but not defined: -listen"},
	}
	for _, tc := range tests {
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "usage: gateway prune") {
			t.Errorf("gateway %v: exit %d, stdout %q, stderr %q; want 2 and %q with the usage", tc.args, code, out, errOut, tc.want)
		}
	}
}

// TestServePrunes: a running gateway prunes at once when it starts (and
// then every retention.interval), and counts what it deleted in
// gateway_retention_deleted_total.
func TestServePrunes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, dialect string) {
		url := newDatabaseURL(t, dialect)
		expired, _ := expiredDatabase(t, url)
		g := startGateway(t, url)
		deadline := time.Now().Add(30 * time.Second)
		for len(present(t, url, expired)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the gateway did not prune within 30s: %v left", present(t, url, expired))
			}
			time.Sleep(20 * time.Millisecond)
		}
		want := []string{
			`gateway_retention_deleted_total{kind="deliveries_failed"} 1`,
			`gateway_retention_deleted_total{kind="deliveries_processed"} 2`,
			`gateway_retention_deleted_total{kind="events"} 2`,
		}
		var body string
		for {
			resp, err := g.client.Get(g.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return strings.Contains(body, w) })
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /metrics lacks %v:\n%s", missing, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
