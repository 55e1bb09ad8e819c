// Package fuzz holds orkwal's proof harnesses: go test -fuzz targets over the
// exported APIs of wal and replay (this file's package has no code of its
// own), and, as they land, the crash-recovery torture tests.
//
// Run one target: go test ./fuzz -run '^$' -fuzz '^FuzzSegment$' -fuzztime 1m
package fuzz
