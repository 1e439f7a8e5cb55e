package sqlite

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenCreatesPrivateFiles: the directory and database files the gateway
// creates are closed to group and others whatever the umask; files and
// directories that exist keep their permissions.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// existing, when set, pre-creates the directory and an empty
		// database file with this mode.
		existing fs.FileMode
	}{
		{name: "created by the gateway"},
		{name: "existing file", existing: 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data", "gateway")
			path := filepath.Join(dir, "gateway.db")
			if tt.existing != 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, tt.existing); err != nil {
					t.Fatal(err)
				}
				// Whatever the umask made of it.
				if err := os.Chmod(path, tt.existing); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			d, err := Open(ctx, path)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer d.Close()
			// Writes create the -wal and -shm files.
			if err := d.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}

			mode := func(p string) fs.FileMode {
				t.Helper()
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatalf("stat: %v", err)
				}
				return fi.Mode().Perm()
			}
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				got := mode(p)
				if tt.existing == 0 && got&0o077 != 0 {
					t.Errorf("%s: mode %o, want no group or other permissions", filepath.Base(p), got)
				}
				if tt.existing != 0 && got != tt.existing {
					t.Errorf("%s: mode %o, want the existing file's %o kept", filepath.Base(p), got, tt.existing)
				}
			}
			if tt.existing == 0 {
				for _, p := range []string{dir, filepath.Dir(dir)} {
					if got := mode(p); got&0o077 != 0 {
						t.Errorf("directory %s: mode %o, want no group or other permissions", filepath.Base(p), got)
					}
				}
			}
		})
	}
}
