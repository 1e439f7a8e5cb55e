package main

import (
	"testing"
	"time"
)

// TestCreatedBy: the time by which a share of the tasks existed, whatever
// order the tasks are listed in; one straggler moves the last task's time,
// not the 99th percentile's.
func TestCreatedBy(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	hundred := make([]time.Time, 0, 100)
	for i := 99; i >= 1; i-- {
		hundred = append(hundred, at(i*10))
	}
	hundred = append(hundred, at(24_000)) // the straggler
	tests := []struct {
		name    string
		created []time.Time
		share   float64
		want    float64
	}{
		{"none", nil, 100, 0},
		{"one", []time.Time{at(500)}, 99, 0.5},
		{"every task, unordered", []time.Time{at(300), at(1000), at(200)}, 100, 1},
		{"half", []time.Time{at(300), at(1000), at(200), at(400)}, 50, 0.3},
		{"every task with a straggler", hundred, 100, 24},
		{"99% with a straggler", hundred, 99, 0.99},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := createdBy(tt.created, t0, tt.share); got != tt.want {
				t.Errorf("createdBy(%v%%) = %v, want %v", tt.share, got, tt.want)
			}
		})
	}
}
