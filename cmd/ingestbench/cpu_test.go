package main

import (
	"math"
	"os"
	"testing"
)

// TestParseStat: the command name runs to the last parenthesis, whatever it
// holds, and the CPU is utime + stime in ticks of 1/100 s.
func TestParseStat(t *testing.T) {
	t.Parallel()
	tail := " S 1 2 3 4 5 6 7 8 9 10 250 130 0 0 20 0 1 0 100 0 0"
	tests := []struct {
		name        string
		line        string
		wantCommand string
		wantCPU     float64
		wantOK      bool
	}{
		{"plain", "42 (postgres)" + tail, "postgres", 3.8, true},
		{"spaces and parentheses in the name", "42 (a (b) c)" + tail, "a (b) c", 3.8, true},
		{"truncated", "42 (postgres) S 1 2 3", "", 0, false},
		{"no name", "42 postgres" + tail, "", 0, false},
		{"not a number", "42 (x) S 1 2 3 4 5 6 7 8 9 10 x 130 0", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			command, cpu, ok := parseStat(tt.line)
			if command != tt.wantCommand || math.Abs(cpu-tt.wantCPU) > 1e-9 || ok != tt.wantOK {
				t.Errorf("parseStat = %q, %v, %v; want %q, %v, %v", command, cpu, ok, tt.wantCommand, tt.wantCPU, tt.wantOK)
			}
		})
	}
}

// TestProcessCPUReadsThisProcess: the live reading works where the
// benchmark runs (Linux), so the CPU lines are not silently zero.
func TestProcessCPUReadsThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc on this system")
	}
	before := processCPU(os.Getpid())
	x := 0
	for i := 0; processCPU(os.Getpid()) == before && i < 1e9; i++ {
		x += i // spin until the kernel has counted a tick
	}
	if processCPU(os.Getpid()) <= before {
		t.Errorf("processCPU did not grow while this test spun (%d)", x)
	}
}

func TestCPUSince(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		before, after map[int]float64
		want          float64
	}{
		{"grown", map[int]float64{1: 1, 2: 2}, map[int]float64{1: 1.5, 2: 3}, 1.5},
		{"started meanwhile counts whole", map[int]float64{1: 1}, map[int]float64{1: 1, 2: 0.25}, 0.25},
		{"ended meanwhile is lost", map[int]float64{1: 1, 2: 9}, map[int]float64{1: 2}, 1},
		{"none", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := cpuSince(tt.before, tt.after); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("cpuSince = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDurableBudget: with both runs keeping the cores busy, the durable
// rate is share of the ceiling's when its total cost per ack is the
// ceiling's over share; the senders' part of it is not the gateway's.
func TestDurableBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		ceiling, durable ackCost
		share            float64
		want             float64
	}{
		{"sqlite", ackCost{senders: 140, server: 50}, ackCost{senders: 140, server: 150}, 0.7, 190/0.7 - 140},
		{"senders cost more when durable", ackCost{senders: 100, server: 40}, ackCost{senders: 120, server: 60, database: 80}, 0.5, 280 - 120},
		{"equal rates", ackCost{senders: 100, server: 50}, ackCost{senders: 100}, 1, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := durableBudget(tt.ceiling, tt.durable, tt.share); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("durableBudget = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCostPerAck(t *testing.T) {
	t.Parallel()
	g := &gateway{cpuSeconds: 1.5, senderCPU: 1.4, databaseCPU: 0.8}
	want := ackCost{senders: 140, server: 150, database: 80}
	if got := costPerAck(g, 10000); got != want {
		t.Errorf("costPerAck = %+v, want %+v", got, want)
	}
	if got := costPerAck(g, 0); got != (ackCost{}) {
		t.Errorf("costPerAck with no acks = %+v, want zero", got)
	}
}

func TestParseSteal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stat   string
		want   float64
		wantOK bool
	}{
		{"steal column", "cpu  1459699 6956 615674 9378378 136141 0 82362 54442 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n", 544.42, true},
		{"cpu line not first", "intr 1 2\ncpu  1 2 3 4 5 6 7 250 0 0\n", 2.5, true},
		{"old kernel without steal", "cpu  1 2 3 4 5 6 7\n", 0, false},
		{"garbled", "cpu  1 2 3 4 5 6 7 x 0 0\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseSteal(tt.stat)
			if math.Abs(got-tt.want) > 1e-9 || ok != tt.wantOK {
				t.Errorf("parseSteal = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
