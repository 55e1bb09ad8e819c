//go:build !linux

package wal

import "os"

// datasync is f.Sync where there is no fdatasync(2).
func datasync(f *os.File) error { return f.Sync() }
