package main

// One gateway serve owns a SQLite database; the other commands still open it.

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSecondServeOnSQLiteIsRefused: a serve on a SQLite database another
// serve runs on stops with a clear error before it touches anything (only
// the owner may take leases back); migrate and prune still open the file
// beside the owner; and once the owner stops, a serve starts there again.
func TestSecondServeOnSQLiteIsRefused(t *testing.T) {
	t.Parallel()
	dbURL := newDatabaseURL(t, "sqlite")
	owner := startGateway(t, dbURL)
	if d := owner.process(t, fixtureHook(t, "github/issues.opened.json")); d.Status != "succeeded" {
		t.Fatalf("opened: %s, want succeeded", d.Status)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--database-url", dbURL, "--config", owner.Config,
		"--admin-token", testAdminToken}, noEnv, &out, &errOut)
	if code == 0 {
		t.Fatalf("a second serve on the database exited 0; stdout %q", out.String())
	}
	for _, want := range []string{"one gateway serve per SQLite database", "gateway.db.lock"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr = %q, want it to contain %q", errOut.String(), want)
		}
	}
	if strings.Contains(out.String(), "listening") {
		t.Errorf("the refused serve printed %q", out.String())
	}

	for _, args := range [][]string{
		{"migrate", "--database-url", dbURL},
		{"prune", "--dry-run", "--database-url", dbURL, "--config", owner.Config},
	} {
		out.Reset()
		errOut.Reset()
		if code := Main(ctx, args, noEnv, &out, &errOut); code != 0 {
			t.Errorf("%s beside a serve: exit %d, stderr %q", args[0], code, errOut.String())
		}
	}
	// The owner still works.
	if d := owner.process(t, fixtureHook(t, "github/issues.edited.json")); d.Status != "succeeded" {
		t.Errorf("edited: %s, want succeeded", d.Status)
	}
}

// TestServeOwnsSQLiteUntilItStops: a serve that stopped released the
// database, so the next one starts (restarts in the same process included).
func TestServeOwnsSQLiteUntilItStops(t *testing.T) {
	t.Parallel()
	dbURL := newDatabaseURL(t, "sqlite")
	serveUntilListening(t, dbURL, noEnv)
	serveUntilListening(t, dbURL, noEnv)
}
