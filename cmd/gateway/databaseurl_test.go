package main

// A SQLite database URL names a file and nothing else.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteURLParametersRefused: a sqlite: URL with parameters is refused
// by every command that opens the database, with an error naming the
// parameter and the accepted ones, before any file is created (it once
// created a stray, world-readable "x.db?_foo=bar" beside a database in
// rollback-journal mode).
func TestSQLiteURLParametersRefused(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "migrate", "prune", "mcp", "send"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dbURL := "sqlite:" + filepath.Join(dir, "x.db") + "?_foo=bar"
			args := []string{cmd, "--database-url", dbURL}
			switch cmd {
			case "serve":
				args = append(args, "--listen", "127.0.0.1:0")
			case "send":
				args = append(args, "--connection", "github", "--file", filepath.Join(fixturesDir, "github", "issues.opened.json"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			var out, errOut bytes.Buffer
			if code := Main(ctx, args, noEnv, &out, &errOut); code == 0 {
				t.Fatalf("exit 0 with %s; stdout %q", dbURL, out.String())
			}
			for _, want := range []string{`unknown parameter "_foo"`, "accepted parameters: none", "sqlite:PATH"} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr %q, want it to contain %q", errOut.String(), want)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("file %q created", e.Name())
			}
		})
	}
}
