package sqlite

import (
	"slices"
	"testing"
	"time"
)

func TestRebind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query, wantSQL string
		wantOrder      []int
	}{
		{`SELECT 1`, `SELECT 1`, nil},
		{`UPDATE t SET a = $2 WHERE id = $1`, `UPDATE t SET a = ? WHERE id = ?`, []int{1, 0}},
		{`INSERT INTO t VALUES ($1, $2, $2)`, `INSERT INTO t VALUES (?, ?, ?)`, []int{0, 1, 1}},
		{`SELECT $10, $1`, `SELECT ?, ?`, []int{9, 0}},
		{`SELECT '$' || $1`, `SELECT '$' || ?`, []int{0}},
	}
	for _, tc := range tests {
		rb := rebind(tc.query)
		if rb.sql != tc.wantSQL || !slices.Equal(rb.order, tc.wantOrder) {
			t.Errorf("rebind(%q) = %q %v, want %q %v", tc.query, rb.sql, rb.order, tc.wantSQL, tc.wantOrder)
		}
	}
}

func TestConvertArgs(t *testing.T) {
	t.Parallel()
	at := time.UnixMicro(1_700_000_000_123_456)
	got, err := convertArgs(`INSERT INTO t VALUES ($2, $1, $2)`, []any{"a", at})
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{at.UnixMicro(), "a", at.UnixMicro()}; !slices.Equal(got, want) {
		t.Errorf("arranged = %v, want %v", got, want)
	}
	for _, args := range [][]any{{"a"}, {"a", "b", "c"}} {
		if _, err := convertArgs(`SELECT $1, $2`, args); err == nil {
			t.Errorf("%d arguments for 2 placeholders: no error", len(args))
		}
	}
}
