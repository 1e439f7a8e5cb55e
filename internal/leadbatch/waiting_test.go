package leadbatch

import (
	"context"
	"slices"
	"testing"
)

// TestWaiting: the members whose context is live are returned in order,
// every other member is reported gone.
func TestWaiting(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	tests := []struct {
		name              string
		ctxs              []context.Context
		wantWaiting, gone []int
	}{
		{"all waiting", []context.Context{live, live}, []int{0, 1}, nil},
		{"some gone", []context.Context{cancelled, live, cancelled, live}, []int{1, 3}, []int{0, 2}},
		{"all gone", []context.Context{cancelled, cancelled}, nil, []int{0, 1}},
		{"empty", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var gone []int
			waiting := Waiting(tt.ctxs, func(c context.Context) context.Context { return c }, func(i int) { gone = append(gone, i) })
			if !slices.Equal(waiting, tt.wantWaiting) || !slices.Equal(gone, tt.gone) {
				t.Errorf("Waiting = %v, gone %v; want %v, gone %v", waiting, gone, tt.wantWaiting, tt.gone)
			}
		})
	}
}
