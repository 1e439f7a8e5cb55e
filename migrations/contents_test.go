package migrations_test

import (
	"bytes"
	"context"
	"database/sql"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for goose
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", for goose

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
	"github.com/trackergateway/gateway/migrations"
)

// TestDeliveryContentsMigration: a delivery stored before migration 00014
// keeps its headers, body and encoding, which move to delivery_contents
// and leave the deliveries row; migrating down puts them back.
func TestDeliveryContentsMigration(t *testing.T) {
	t.Parallel()
	storetest.ForDialects(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		db, p := migrationProvider(t, dialect)
		if _, err := p.UpTo(ctx, 13); err != nil {
			t.Fatalf("migrate to 13: %v", err)
		}
		const id = "0195d2a8-3b7c-7000-8000-000000000001"
		headers, body := `{"X-Github-Event":["issues"]}`, []byte{0xff, 0x06, 0x00, 0x00, 's', '2'}
		if _, err := db.ExecContext(ctx, rebind(dialect, `INSERT INTO deliveries (id, connection_id, provider, event,
			delivery_key, status, attempts, next_attempt_at, received_at, headers, body, body_encoding)
			VALUES ($1, 'gh', 'github', 'issues', 'k1', 'succeeded', 1, $2, $2, $3, $4, 's2')`),
			id, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), headers, body); err != nil {
			t.Fatalf("store a delivery at 13: %v", err)
		}

		if _, err := p.UpTo(ctx, 14); err != nil {
			t.Fatalf("migrate to 14: %v", err)
		}
		var gotHeaders, gotEncoding string
		var gotBody []byte
		if err := db.QueryRowContext(ctx, rebind(dialect, `SELECT headers, body, body_encoding FROM delivery_contents
			WHERE delivery_id = $1`), id).Scan(&gotHeaders, &gotBody, &gotEncoding); err != nil {
			t.Fatalf("read the content at 14: %v", err)
		}
		if gotHeaders != headers || !bytes.Equal(gotBody, body) || gotEncoding != "s2" {
			t.Errorf("content at 14 = %q %x %q, want %q %x s2", gotHeaders, gotBody, gotEncoding, headers, body)
		}
		if _, err := db.ExecContext(ctx, `SELECT body FROM deliveries`); err == nil {
			t.Errorf("deliveries still has a body column at 14")
		}

		if _, err := p.DownTo(ctx, 13); err != nil {
			t.Fatalf("migrate down to 13: %v", err)
		}
		gotBody = nil
		if err := db.QueryRowContext(ctx, rebind(dialect, `SELECT headers, body, body_encoding FROM deliveries
			WHERE id = $1`), id).Scan(&gotHeaders, &gotBody, &gotEncoding); err != nil {
			t.Fatalf("read the delivery back at 13: %v", err)
		}
		if gotHeaders != headers || !bytes.Equal(gotBody, body) || gotEncoding != "s2" {
			t.Errorf("delivery back at 13 = %q %x %q, want %q %x s2", gotHeaders, gotBody, gotEncoding, headers, body)
		}
	})
}

// migrationProvider opens an empty database of the dialect (a fresh SQLite
// file, or a fresh PostgreSQL schema) and a goose provider over the
// dialect's migrations.
func migrationProvider(t *testing.T, dialect string) (*sql.DB, *goose.Provider) {
	t.Helper()
	var db *sql.DB
	var err error
	var sub fs.FS
	gooseDialect := goose.DialectSQLite3
	switch dialect {
	case store.DialectSQLite:
		db, err = sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db")+"?_pragma=foreign_keys(1)")
		sub, _ = fs.Sub(migrations.SQLite, "sqlite")
	case store.DialectPostgres:
		raw := storetest.PostgresURL(t)
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("parse url: %v", perr)
		}
		q := u.Query()
		q.Set("search_path", storetest.NewSchema(t, raw))
		u.RawQuery = q.Encode()
		db, err = sql.Open("pgx", u.String())
		sub, _ = fs.Sub(migrations.Postgres, "postgres")
		gooseDialect = goose.DialectPostgres
	}
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(gooseDialect, db, sub)
	if err != nil {
		t.Fatalf("migrations: %v", err)
	}
	return db, p
}

// rebind turns $N placeholders into SQLite's ?N.
func rebind(dialect, q string) string {
	if dialect != store.DialectSQLite {
		return q
	}
	return strings.ReplaceAll(q, "$", "?")
}
