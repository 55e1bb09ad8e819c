package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/orkwal/orkwal/executors"
)

// Layout is a data folder, the one place that names where each of its files
// lives (docs/format.md, "Data folder"):
//
//	FORMAT                                the format version
//	LOCK                                  the advisory lock (wal.AcquireLock names it)
//	wal/                                  the log's segments
//	snapshots/snapshot-<index>.snap       snapshots, index zero-padded to 20 digits
//	logs/<run>/<task>/<attempt>.log       task output (and its .ring, .tail)
//	work/<run>.<task>.<attempt>.*         an attempt's contract files
//	work/input-<hash>.json                the shared input files (executors names them)
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

// logs is the folder of the runs' log folders, removed with their runs.
func (l Layout) logs() string { return l.path("logs") }

// work is the folder of the attempts' scratch files (see Scratch).
func (l Layout) work() string { return l.path("work") }

// AttemptLog is where an attempt's stdout and stderr go. task is the task's
// key within its run ("process" or "process[3]").
func (l Layout) AttemptLog(run, task string, attempt int) string {
	return l.attemptDirs().log(run, task, attempt)
}

// Scratch is the path prefix of an attempt's contract files (see
// executors.Job.Scratch): side by side in work/, named after the run, so
// that starting a task creates no folder (creating one is a new inode, as
// much CPU as the spawn on some filesystems: one per run for runs of one
// task). scratchRun tells the run of a name there.
func (l Layout) Scratch(run, task string, attempt int) string {
	return l.attemptDirs().scratch(run, task, attempt)
}

// attemptDirs are the folders that AttemptLog and Scratch name an
// attempt's files in, made once (Engine.dirs): every dispatch names two
// files, which filepath.Join made in 8 allocations (issue 27).
type attemptDirs struct{ logs, work string }

func (l Layout) attemptDirs() attemptDirs { return attemptDirs{logs: l.logs(), work: l.work()} }

// log is AttemptLog: logs/<run>/<task>/<attempt>.log, one allocation.
func (d attemptDirs) log(run, task string, attempt int) string {
	if !pathElem(run) || !pathElem(task) {
		return filepath.Join(d.logs, run, task, strconv.Itoa(attempt)+".log")
	}
	var b [256]byte
	p := append(append(append(append(append(b[:0], d.logs...), '/'), run...), '/'), task...)
	return string(append(strconv.AppendInt(append(p, '/'), int64(attempt), 10), ".log"...))
}

// scratch is Scratch: work/<run>.<task>.<attempt>, one allocation.
func (d attemptDirs) scratch(run, task string, attempt int) string {
	if !pathElem(run) || !pathElem(task) {
		return filepath.Join(d.work, run+"."+task+"."+strconv.Itoa(attempt))
	}
	var b [256]byte
	p := append(append(append(append(append(b[:0], d.work...), '/'), run...), '.'), task...)
	return string(strconv.AppendInt(append(p, '.'), int64(attempt), 10))
}

// pathElem tells whether name is one path element that filepath.Join
// leaves as it is, so that joining it is appending it: a run id, a task's
// key (workflow names allow no slash, and start with a letter or digit).
func pathElem(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.Contains(name, "/")
}

// scratchRun is the run whose scratch file (or run folder, for data folders
// written before Scratch was flat) has this name in work/, if the name is
// one: a run id (a UUID) alone or followed by a dot.
func scratchRun(name string) (string, bool) {
	run, _, _ := strings.Cut(name, ".")
	if uuid.Validate(run) != nil {
		return "", false
	}
	return run, true
}

// removeRunScratch removes what work/ holds of the given runs: their
// folders (data folders written before Scratch was flat) and their scratch
// files (an attempt's are removed when it ends; those of an attempt whose
// end a crash cut short stay until its run goes), and, with boot (before
// any start), the input files that a previous life of the daemon kept
// (see executors.IsInputFile) and every attempt's output file (see
// executors.IsAttemptOutput: no attempt runs yet, so each is stale, and a
// start need not look at its own). One listing of work/, which holds only
// the files of attempts in flight, the shared inputs and such leftovers.
// removed counts the names of gone runs.
func (l Layout) removeRunScratch(gone func(run string) bool, boot bool) (removed int, err error) {
	des, err := os.ReadDir(l.work())
	if err != nil {
		return 0, nil // none yet
	}
	remove := func(name string, all bool) {
		rm := os.Remove
		if all {
			rm = os.RemoveAll // a folder, or one a task made at ORKWAL_OUTPUT
		}
		if rerr := rm(filepath.Join(l.work(), name)); rerr != nil && err == nil {
			err = rerr
		}
	}
	for _, de := range des {
		name := de.Name()
		run, ok := scratchRun(name)
		switch {
		case boot && executors.IsInputFile(name):
			remove(name, false)
		case ok && gone(run):
			remove(name, true)
			removed++
		case ok && boot && executors.IsAttemptOutput(name):
			remove(name, true)
		}
	}
	return removed, err
}
