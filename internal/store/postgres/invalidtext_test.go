package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/trackergateway/gateway/internal/store"
	"github.com/trackergateway/gateway/internal/store/storetest"
)

// TestInvalidTextIsClassified: text PostgreSQL refuses (a NUL, invalid
// UTF-8) comes back as store.ErrInvalidText, whether it is a parameter of a
// read or a write, so the HTTP layer answers 400 rather than 500.
func TestInvalidTextIsClassified(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.DialectPostgres)
	ctx := context.Background()
	tests := []struct {
		name string
		run  func() error
	}{
		{"NUL in a written name", func() error {
			return s.CreateWorkspace(ctx, store.Workspace{ID: "nul", Name: "a\x00b", TaskPrefix: "NUL", CreatedAt: time.Now(),
				Steps: []store.Step{{ID: "backlog", Name: "Backlog"}}})
		}},
		{"invalid UTF-8 in a written name", func() error {
			return s.CreateWorkspace(ctx, store.Workspace{ID: "utf", Name: "a\xffb", TaskPrefix: "UTF", CreatedAt: time.Now(),
				Steps: []store.Step{{ID: "backlog", Name: "Backlog"}}})
		}},
		{"NUL in a read key", func() error {
			_, err := s.GetWorkspace(ctx, "a\x00b")
			return err
		}},
		{"invalid UTF-8 in a read key", func() error {
			_, err := s.GetWorkspace(ctx, "\xff\xfe")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, store.ErrInvalidText) {
				t.Fatalf("error = %v, want %v", err, store.ErrInvalidText)
			}
		})
	}
}
