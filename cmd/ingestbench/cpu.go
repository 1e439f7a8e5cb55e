package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The throughput phases keep both cores of the machine busy, so a ratio of
// two rates is the inverse ratio of what one acknowledgement costs all the
// processes together: the senders (this process), the server (the ceiling
// server or the gateway) and, on PostgreSQL, the database server. Each run
// reads all three, which says where a durable acknowledgement's CPU goes
// and how much of it a target leaves to the gateway and its database.

// processCPU is the user and system CPU time pid has used, in seconds; 0
// when it cannot be read.
func processCPU(pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, cpu, ok := parseStat(string(raw))
	if !ok {
		return 0
	}
	return cpu
}

// parseStat reads the command name and the user and system CPU seconds of
// a /proc/PID/stat line (which counts CPU in USER_HZ ticks, 100 a second on
// Linux).
func parseStat(line string) (command string, cpuSeconds float64, ok bool) {
	// The command name may hold spaces and parentheses: it runs from the
	// first "(" to the last ")", and the fields after it start with the
	// state (field 3).
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(line[end+1:])
	if len(fields) < 13 {
		return "", 0, false
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(fields[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return line[open+1 : end], (utime + stime) / 100, true
}

// serverCPU is the CPU seconds used so far by every process of this machine
// named postgres (the postmaster, its backends and helpers), by PID.
func serverCPU() map[int]float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int]float64{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if command, cpu, ok := parseStat(string(raw)); ok && command == "postgres" {
			out[pid] = cpu
		}
	}
	return out
}

// cpuSince is what the processes of after used since before; a process
// that started meanwhile counts whole, one that ended meanwhile is lost
// (the gateway's connections live as long as the run).
func cpuSince(before, after map[int]float64) float64 {
	var sum float64
	for pid, cpu := range after {
		sum += cpu - before[pid]
	}
	return sum
}

// ackCost is the CPU one acknowledgement cost each process of a run, in
// microseconds.
type ackCost struct {
	senders, server, database float64
}

func costPerAck(g *gateway, acks float64) ackCost {
	if acks <= 0 {
		return ackCost{}
	}
	per := func(seconds float64) float64 { return 1e6 * seconds / acks }
	return ackCost{senders: per(g.senderCPU), server: per(g.cpuSeconds), database: per(g.databaseCPU)}
}

func (c ackCost) total() float64 { return c.senders + c.server + c.database }

// durableBudget is the CPU per acknowledgement the gateway and its
// database may use together for the durable rate to be share (0.7 for
// 70%) of the ceiling's, when both runs keep the same cores busy: the
// ceiling run's total over share, less what the senders cost in the
// durable run.
func durableBudget(ceiling, durable ackCost, share float64) float64 {
	return ceiling.total()/share - durable.senders
}

// stealSeconds is the CPU time the hypervisor has taken from this machine's
// cores since boot (the steal column of /proc/stat, in USER_HZ ticks); 0
// when it cannot be read. On a shared VM a slow or stalled run shows up
// here, which tells the machine's noise from the gateway's.
func stealSeconds() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	steal, _ := parseSteal(string(raw))
	return steal
}

// parseSteal reads the steal seconds of the "cpu" line of /proc/stat
// (user nice system idle iowait irq softirq steal ...).
func parseSteal(stat string) (float64, bool) {
	for line := range strings.SplitSeq(stat, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 9 || fields[0] != "cpu" {
			continue
		}
		ticks, err := strconv.ParseFloat(fields[8], 64)
		if err != nil {
			return 0, false
		}
		return ticks / 100, true
	}
	return 0, false
}
