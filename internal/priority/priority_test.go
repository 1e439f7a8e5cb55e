package priority

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestYield(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		busy func(calls int64) bool
		max  time.Duration
		// want is Yield's answer; minCalls the least number of times busy
		// must have been asked.
		want     bool
		minCalls int64
	}{
		{name: "nil busy", ctx: context.Background(), max: time.Hour},
		{name: "idle at once", ctx: context.Background(), busy: func(int64) bool { return false }, max: time.Hour, minCalls: 1},
		{name: "busy until the third look", ctx: context.Background(), busy: func(n int64) bool { return n < 3 }, max: time.Hour, minCalls: 3},
		{name: "busy for good: gives up after max", ctx: context.Background(), busy: func(int64) bool { return true },
			max: 10 * time.Millisecond, want: true, minCalls: 2},
		{name: "busy, context ended", ctx: cancelled, busy: func(int64) bool { return true }, max: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			var busy func() bool
			if tt.busy != nil {
				busy = func() bool { return tt.busy(calls.Add(1)) }
			}
			if got := Yield(tt.ctx, busy, tt.max); got != tt.want {
				t.Errorf("Yield = %t, want %t", got, tt.want)
			}
			if calls.Load() < tt.minCalls {
				t.Errorf("busy asked %d times, want at least %d", calls.Load(), tt.minCalls)
			}
		})
	}
}
