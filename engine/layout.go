package engine

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Layout is a data folder, the one place that names where each of its files
// lives (docs/format.md, "Data folder"):
//
//	FORMAT                                the format version
//	LOCK                                  the advisory lock (wal.AcquireLock names it)
//	wal/                                  the log's segments
//	snapshots/snapshot-<index>.snap       snapshots, index zero-padded to 20 digits
//	logs/<run>/<task>/<attempt>.log       task output (and its .ring, .tail)
//	work/<run>/<task>.<attempt>.*         an attempt's contract files
//	work/input-empty.json                 the input of every attempt whose input is empty
//
// The value is the folder's path.
type Layout string

// Snapshot file names.
const (
	snapshotPrefix = "snapshot-"
	snapshotExt    = ".snap"
)

func (l Layout) path(parts ...string) string {
	return filepath.Join(append([]string{string(l)}, parts...)...)
}

// WAL is the folder of the log's segments.
func (l Layout) WAL() string { return l.path("wal") }

// Format is the format version file.
func (l Layout) Format() string { return l.path(FormatFile) }

// Snapshots is the folder of snapshots.
func (l Layout) Snapshots() string { return l.path("snapshots") }

// Snapshot is the snapshot taken at WAL index index.
func (l Layout) Snapshot(index uint64) string {
	return l.path("snapshots", fmt.Sprintf("%s%020d%s", snapshotPrefix, index, snapshotExt))
}

// RunFolders are the folders holding one subfolder per run, removed with
// the run.
func (l Layout) RunFolders() []string { return []string{l.path("logs"), l.path("work")} }

// AttemptLog is where an attempt's stdout and stderr go. task is the task's
// key within its run ("process" or "process[3]").
func (l Layout) AttemptLog(run, task string, attempt int) string {
	return l.path("logs", run, task, strconv.Itoa(attempt)+".log")
}

// Scratch is the path prefix of an attempt's contract files (see
// executors.Job.Scratch): in the run's folder, so that starting a task
// creates files there and no folder.
func (l Layout) Scratch(run, task string, attempt int) string {
	return l.path("work", run, task+"."+strconv.Itoa(attempt))
}

// EmptyInput is the input file shared by the attempts whose input is the
// empty document (no params, inputs, upstream or item: see
// executors.Job.InputFile), so that they create no input file each.
func (l Layout) EmptyInput() string { return l.path("work", "input-empty.json") }
