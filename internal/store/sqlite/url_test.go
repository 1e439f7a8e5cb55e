package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, path string
		err       []string // substrings of the error; nil: no error
	}{
		{url: "sqlite:./data/gateway.db", path: "./data/gateway.db"},
		{url: "sqlite:/var/lib/gateway.db", path: "/var/lib/gateway.db"},
		{url: "sqlite:///var/lib/gateway.db", path: "/var/lib/gateway.db"},
		{url: "sqlite://data/gateway.db", path: "data/gateway.db"},
		{url: "sqlite:/tmp/50%25 #1.db", path: "/tmp/50%25 #1.db"},
		{url: "sqlite:/tmp/x.db?_foo=bar", err: []string{`unknown parameter "_foo"`, "accepted parameters: none", "sqlite:PATH"}},
		{url: "sqlite:/tmp/x.db?_pragma=journal_mode(delete)&mode=ro", err: []string{`unknown parameters ["_pragma" "mode"]`, "accepted parameters: none"}},
		{url: "sqlite:/tmp/x.db?", err: []string{"takes no parameters"}},
		{url: "sqlite:", err: []string{"no file path"}},
		{url: "sqlite://", err: []string{"no file path"}},
		{url: "postgres://localhost/x", err: []string{"must start with sqlite:"}},
	}
	for _, tc := range tests {
		path, err := ParseURL(tc.url)
		if tc.err == nil {
			if err != nil || path != tc.path {
				t.Errorf("ParseURL(%q) = %q, %v; want %q", tc.url, path, err, tc.path)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseURL(%q) = %q, want an error", tc.url, path)
			continue
		}
		for _, want := range tc.err {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseURL(%q) error %q, want it to contain %q", tc.url, err, want)
			}
		}
	}
}

// TestOpenNamesTheFileExactly: whatever characters the path holds (SQLite
// reads its file: URI's '?', '#' and '%'), the database is the file named,
// private to its owner, in WAL mode with synchronous=FULL, and nothing else
// appears beside it.
func TestOpenNamesTheFileExactly(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"gateway.db", "x.db?_foo=bar", "a#b.db", "50%25.db", "100%.db"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			ctx := context.Background()
			d, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer d.Close()
			if err := d.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			var mode string
			var sync int
			if err := d.wconn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := d.wconn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" || sync != 2 {
				t.Errorf("journal mode %s, synchronous %d; want wal, 2 (FULL)", mode, sync)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
				fi, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("%s: mode %o, want 600", e.Name(), got)
				}
			}
			if want := []string{name, name + "-shm", name + "-wal"}; !slices.Equal(names, want) {
				t.Errorf("files %q, want %q", names, want)
			}
		})
	}
}
