package store_test

import (
	"context"
	"testing"

	"github.com/trackergateway/gateway/internal/store"
)

type memberKey struct{}

// TestSyncingContext: a transaction shared by several callers commits under
// the context of one that waits for the disk, if any does, else the
// first's.
func TestSyncingContext(t *testing.T) {
	t.Parallel()
	member := func(name string, deferred bool) context.Context {
		ctx := context.WithValue(context.Background(), memberKey{}, name)
		if deferred {
			ctx = store.WithDeferredSync(ctx)
		}
		return ctx
	}
	tests := []struct {
		name    string
		members []context.Context
		want    string
	}{
		{"all deferred", []context.Context{member("a", true), member("b", true)}, "a"},
		{"one synced", []context.Context{member("a", true), member("b", false), member("c", true)}, "b"},
		{"first synced", []context.Context{member("a", false), member("b", false)}, "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := store.SyncingContext(tt.members, func(ctx context.Context) context.Context { return ctx })
			if name := got.Value(memberKey{}); name != tt.want {
				t.Errorf("SyncingContext chose %v's context, want %s's", name, tt.want)
			}
		})
	}
}
