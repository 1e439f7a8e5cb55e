package sqlite

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkPartialIndexPredicates is the measurement behind migration
// 00013: one delivery's life (an insert, then two status updates) on a
// table with the inbox's four partial indexes and its status CHECK, their
// predicates written as IN lists or as ORs of equalities. SQLite builds a
// temporary B-tree for each constant IN list of more than two values it
// evaluates, so the IN forms cost a tree per predicate per row written.
func BenchmarkPartialIndexPredicates(b *testing.B) {
	for _, tc := range []struct {
		name               string
		orIndexes, orCheck bool
	}{
		{"in-indexes/in-check", false, false},
		{"or-indexes/in-check", true, false},
		{"or-indexes/or-check", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := partialIndexTable(b, tc.orIndexes, tc.orCheck)
			insert, err := db.Prepare(`INSERT INTO deliveries VALUES (?, 'c', 'queued', ?, ?, NULL, zeroblob(3000))`)
			if err != nil {
				b.Fatal(err)
			}
			update, err := db.Prepare(`UPDATE deliveries SET status = ?, processed_at = ? WHERE id = ?`)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				id := fmt.Sprint(i)
				if _, err := insert.Exec(id, i, i); err != nil {
					b.Fatal(err)
				}
				if _, err := update.Exec("processing", nil, id); err != nil {
					b.Fatal(err)
				}
				if _, err := update.Exec("succeeded", i, id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func partialIndexTable(b *testing.B, orIndexes, orCheck bool) *sql.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "bench.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	predicate := func(or bool, values ...string) string {
		if !or {
			return "status IN ('" + strings.Join(values, "', '") + "')"
		}
		terms := make([]string, len(values))
		for i, v := range values {
			terms[i] = "status = '" + v + "'"
		}
		return "(" + strings.Join(terms, " OR ") + ")"
	}
	rare := predicate(orIndexes, "failed", "retrying", "ignored", "suppressed")
	for _, stmt := range []string{
		`CREATE TABLE deliveries (id TEXT PRIMARY KEY, connection_id TEXT,
			status TEXT CHECK (` + predicate(orCheck, "queued", "processing", "succeeded", "ignored", "suppressed", "retrying", "failed") + `),
			received_at INTEGER, next_attempt_at INTEGER, processed_at INTEGER, body BLOB)`,
		`CREATE INDEX due ON deliveries (next_attempt_at) WHERE ` + predicate(orIndexes, "queued", "retrying", "processing"),
		`CREATE INDEX by_status ON deliveries (status, received_at, id) WHERE ` + rare,
		`CREATE INDEX by_connection_status ON deliveries (connection_id, status, received_at, id) WHERE ` + rare,
		`CREATE INDEX finished ON deliveries (status, processed_at) WHERE ` + predicate(orIndexes, "succeeded", "ignored", "suppressed", "failed"),
	} {
		if _, err := db.Exec(stmt); err != nil {
			b.Fatal(err)
		}
	}
	return db
}
