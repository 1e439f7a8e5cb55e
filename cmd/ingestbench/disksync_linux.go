package main

import (
	"os"
	"syscall"
)

// syncCall is the system call the gateway's SQLite commits with on Linux,
// so the probe times the same one.
const syncCall = "fdatasync"

func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
