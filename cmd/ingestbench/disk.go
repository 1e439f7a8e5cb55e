package main

// The disk phase: what the machine's disk allows an acknowledgement. Every
// acknowledged webhook waits for a sync of the WAL, so a sync that stalls
// for 100 ms stalls every acknowledgement behind it, and at 1,000/s a few
// such stalls in a 10 s phase decide its p99 whatever the gateway does.
// The phase writes 16 KiB and syncs it a thousand times a second (a
// receipt commit's size and the ack phase's rate) in the database's
// directory, without a gateway, so that an ack p99 can be read against
// the disk it ran on. It syncs with the call SQLite's commits use
// (syncCall: fdatasync on Linux).

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trackergateway/gateway/internal/store/sqlite"
)

// diskStall is the sync time over which the probe counts a stall.
const diskStall = 20 * time.Millisecond

type diskResult struct {
	syncs        latencies
	stalls       int           // syncs over diskStall
	stalledFor   time.Duration // their total time
	phase        time.Duration
	dir          string
	writeFailure error
}

func (r diskResult) String() string {
	if r.writeFailure != nil {
		return fmt.Sprintf("disk probe in %s failed: %v", r.dir, r.writeFailure)
	}
	return fmt.Sprintf("disk in %s: %d %ss of 16 KiB at 1000/s, p50 %s p99 %s max %s; %d over %s, %s in all over %s",
		r.dir, r.syncs.n, syncCall, r.syncs.p(50), r.syncs.p(99), r.syncs.p(100), r.stalls, diskStall, r.stalledFor.Round(time.Millisecond), r.phase.Round(time.Second))
}

// diskDir is where the probe writes: beside a SQLite database, else in the
// temporary directory (a PostgreSQL server's data directory is its own).
func diskDir(dbURL string) string {
	if path, err := sqlite.ParseURL(dbURL); err == nil {
		return filepath.Dir(path)
	}
	return os.TempDir()
}

// probeDisk writes and syncs 16 KiB every millisecond for d, over a 16 MB
// file it overwrites in turn (as the WAL is, once it starts again).
func probeDisk(dir string, d time.Duration) diskResult {
	r := diskResult{dir: dir}
	f, err := os.CreateTemp(dir, "ingestbench-disk-*")
	if err != nil {
		r.writeFailure = err
		return r
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const span, size = 16 << 20, 16 << 10
	buf := make([]byte, size)
	start := time.Now()
	for off := 0; time.Since(start) < d; off = (off + size) % span {
		due := start.Add(time.Duration(r.syncs.n) * time.Millisecond)
		time.Sleep(time.Until(due))
		if _, err := f.WriteAt(buf, int64(off)); err != nil {
			r.writeFailure = err
			return r
		}
		began := time.Now()
		if err := syncData(f); err != nil {
			r.writeFailure = err
			return r
		}
		took := time.Since(began)
		r.syncs.d = append(r.syncs.d, took)
		r.syncs.n++
		if took > diskStall {
			r.stalls++
			r.stalledFor += took
		}
	}
	r.phase = time.Since(start)
	return r
}
