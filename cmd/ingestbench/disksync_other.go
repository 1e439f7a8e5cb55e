//go:build !linux

package main

import "os"

// syncCall is what the probe times where it does not use fdatasync.
const syncCall = "fsync"

func syncData(f *os.File) error { return f.Sync() }
