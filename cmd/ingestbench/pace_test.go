package main

import (
	"testing"
	"time"
)

// TestPaceOf: tasks created up to the last delivery's arrival count for the
// pace while sending (over the sending window), the rest for the pace after.
func TestPaceOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name    string
		created []time.Time
		last    time.Time // the last delivery's arrival
		want    processingPace
	}{
		{"keeps pace", []time.Time{at(100), at(500), at(1000)}, at(1000), processingPace{whileSending: 3}},
		{"falls behind", []time.Time{at(500), at(1500), at(2000)}, at(1000), processingPace{whileSending: 1, after: 2}},
		{"nothing while sending", []time.Time{at(1500), at(3000)}, at(1000), processingPace{after: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := paceOf(tt.created, t0, tt.last); got != tt.want {
				t.Errorf("paceOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
