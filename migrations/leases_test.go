package migrations_test

import (
	"context"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

// TestEntityLeasesWithoutRowidMigration: on SQLite migration 00015 rebuilds
// entity_leases as a WITHOUT ROWID table, keeping the leases held; migrating
// down rebuilds the rowid table with them.
func TestEntityLeasesWithoutRowidMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := migrationProvider(t, store.DialectSQLite)
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatalf("migrate to 14: %v", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO entity_leases (entity_key, owner, delivery_id, expires_at)
		VALUES ('ws|github:github.com:issue:1', 'host-1-abc', 'd1', 1767225600000000)`); err != nil {
		t.Fatalf("take a lease at 14: %v", err)
	}
	steps := []struct {
		name       string
		migrate    func() error
		wantRowids bool
	}{
		{"up to 15", func() error { _, err := p.UpTo(ctx, 15); return err }, false},
		{"down to 14", func() error { _, err := p.DownTo(ctx, 14); return err }, true},
	}
	for _, st := range steps {
		if err := st.migrate(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		var owner, deliveryID string
		var expires int64
		if err := db.QueryRowContext(ctx, `SELECT owner, delivery_id, expires_at FROM entity_leases
			WHERE entity_key = 'ws|github:github.com:issue:1'`).Scan(&owner, &deliveryID, &expires); err != nil {
			t.Fatalf("%s: read the lease: %v", st.name, err)
		}
		if owner != "host-1-abc" || deliveryID != "d1" || expires != 1767225600000000 {
			t.Errorf("%s: lease = %s %s %d, want host-1-abc d1 1767225600000000", st.name, owner, deliveryID, expires)
		}
		// A rowid table answers rowid; a WITHOUT ROWID table has none.
		_, err := db.ExecContext(ctx, `SELECT rowid FROM entity_leases`)
		if gotRowids := err == nil; gotRowids != st.wantRowids {
			t.Errorf("%s: entity_leases has rowids = %v, want %v", st.name, gotRowids, st.wantRowids)
		}
	}
}
