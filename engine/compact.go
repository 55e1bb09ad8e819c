package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/replay"
	"github.com/orkwal/orkwal/wal"
)

// Compaction (docs/format.md, "Snapshot and truncation"):
//
//  1. Under the lock, after a turn's append: record runs_pruned for the
//     finished runs past retention, then begin a snapshot of the state at
//     the last durable index N (replay.State.BeginSnapshot: it copies no
//     run). The loop itself then copies the runs and tasks, one step of
//     snapshotStep after each turn (or, with nothing else to do, one step
//     per pass) under the lock, until the copy is complete; what a turn
//     changes meanwhile is saved first by Apply (copy on write,
//     replay/cow.go), so the copy is the state at N. The loop never waits
//     for a copier: a step costs a turn its own CPU time only. Close
//     completes a copy the loop left.
//  2. In the background: write snapshots/snapshot-N.snap.tmp, fsync it,
//     rename it, fsync the folder.
//  3. Truncate the log's front up to the previous snapshot's index P (not
//     N): a corrupt newest snapshot then still falls back to the previous
//     one plus the log. fsync the wal folder.
//  4. Remove snapshots older than P. (The log folders of pruned runs
//     went at the start of step 2: their record is durable, and a failed
//     snapshot must not keep them.)
//
// A crash at any step leaves a state that boot recovers to the same state:
// a .tmp snapshot is ignored and removed, a renamed snapshot is used, an
// untruncated log only holds frames that replay skips.

// snapshotStep is how many runs and tasks one step of a snapshot's copy
// takes under the lock: about 0.5 ms of copying.
const snapshotStep = 2048

// copying is a snapshot the loop is copying (loop-owned).
type copying struct {
	snap   *replay.Snapshot
	prev   uint64 // the previous snapshot's index, to truncate to
	pruned []string
	steps  int
	// longest is the longest step's time (lock wait excluded).
	longest time.Duration
}

// compactResult is the background writer's report to the loop.
type compactResult struct {
	index  uint64
	pruned []string
	err    error
}

// snapshotIndexes lists the snapshot files' indexes, newest first. It
// changes nothing: it runs beside a compaction writing its .tmp file, and in
// `orkwal wal verify`.
func snapshotIndexes(dataDir string) ([]uint64, error) {
	dir := Layout(dataDir).Snapshots()
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: list snapshots: %w", err)
	}
	var out []uint64
	for _, de := range des {
		name := de.Name()
		num, ok := strings.CutPrefix(strings.TrimSuffix(name, snapshotExt), snapshotPrefix)
		if idx, err := strconv.ParseUint(num, 10, 64); ok && err == nil && strings.HasSuffix(name, snapshotExt) {
			out = append(out, idx)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out, nil
}

// removeStaleTmp removes the .tmp snapshots a crash left before step 2's
// rename. Boot only: at any other time a .tmp file may be a compaction in
// progress.
func removeStaleTmp(dataDir string) {
	tmps, _ := filepath.Glob(filepath.Join(Layout(dataDir).Snapshots(), "*"+snapshotExt+".tmp"))
	for _, p := range tmps {
		os.Remove(p)
	}
}

// loadSnapshot returns the state of the newest valid snapshot, or a fresh
// state and index 0. A snapshot that does not load is reported loudly and
// the next older one is tried.
func (e *Engine) loadSnapshot() (*replay.State, uint64, error) {
	removeStaleTmp(e.cfg.DataDir)
	st, idx, err := LoadSnapshot(e.cfg.DataDir, e.log)
	e.snapIndex = idx
	if err == nil {
		e.finishRemoval(idx)
	}
	return st, idx, err
}

// newestSnapshot is the index of the data folder's newest snapshot file,
// whether it loads or not, or 0.
func (e *Engine) newestSnapshot() uint64 {
	if idxs, _ := snapshotIndexes(e.cfg.DataDir); len(idxs) > 0 {
		return idxs[0]
	}
	return 0
}

// finishRemoval does step 4 of a compaction a crash cut short (after its
// rename, before its removal): of the snapshots older than loaded (the one
// boot uses), the newest stays, the fallback a compaction keeps, and the
// older ones go. Without it a daemon killed there and then stopped with
// nothing to snapshot kept three snapshots (found by fuzz/TestKill9's
// bound after the clean stop). Newer snapshots that did not load are
// left for the operator (`orkwal wal verify` reports them).
func (e *Engine) finishRemoval(loaded uint64) {
	idxs, _ := snapshotIndexes(e.cfg.DataDir)
	for i, idx := range idxs {
		if idx < loaded {
			if i+1 < len(idxs) {
				e.removeOld(idx)
			}
			return
		}
	}
}

// LoadSnapshot returns the state of a data folder's newest valid snapshot
// and its WAL index, or a fresh state and 0 when there is none. A snapshot
// that does not load is reported on logger and the next older one is tried.
func LoadSnapshot(dataDir string, logger *slog.Logger) (*replay.State, uint64, error) {
	st, idx, _, err := CheckSnapshots(dataDir, logger)
	return st, idx, err
}

// BadSnapshot is a snapshot file that does not load, and why.
type BadSnapshot struct {
	Path  string
	Index uint64
	Err   error
}

// CheckSnapshots is LoadSnapshot that also returns the newer snapshots it
// skipped because they do not load (newest first): what a boot logs and
// falls back from, and `orkwal wal verify` reports as corruption.
func CheckSnapshots(dataDir string, logger *slog.Logger) (*replay.State, uint64, []BadSnapshot, error) {
	idxs, err := snapshotIndexes(dataDir)
	if err != nil {
		return nil, 0, nil, err
	}
	var bad []BadSnapshot
	for _, idx := range idxs {
		path := Layout(dataDir).Snapshot(idx)
		st, err := readSnapshot(path)
		if err != nil {
			logger.Error("snapshot does not load; trying an older one, or the whole log", "file", path, "err", err)
			bad = append(bad, BadSnapshot{Path: path, Index: idx, Err: err})
			continue
		}
		return st, idx, bad, nil
	}
	return replay.New(), 0, bad, nil
}

// readSnapshot restores the state of the snapshot file at path; it reads
// the file in pieces (replay.ReadSnapshot), never whole.
func readSnapshot(path string) (*replay.State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, _, err := replay.ReadSnapshot(f, fi.Size())
	return st, err
}

// maybeCompact begins a compaction once the log has grown by CompactBytes
// since the last snapshot: the loop copies it step by step (copyStep).
// Called under the write lock after an append.
func (e *Engine) maybeCompact(now int64) {
	if e.compacting || e.cfg.CompactBytes <= 0 || e.logBytes < e.cfg.CompactBytes || e.poison.Load() != nil {
		return
	}
	pruned := e.prune(now)
	if e.poison.Load() != nil {
		return // prune's record failed: no snapshot of a failed log
	}
	snap := e.state.BeginSnapshot(e.wal.LastIndex())
	e.spanMax = max(e.spanMax, e.logBytes)
	e.compacting, e.logBytes = true, 0
	e.copying = &copying{snap: snap, prev: e.snapIndex, pruned: pruned}
	e.compactFault("begin") // tests: a notification; its error is ignored
}

// copyStep copies one step of the snapshot being copied, under the write
// lock; once the copy is complete it starts the background writer (steps 2
// to 4). Loop goroutine only, or Close once the loop has returned.
func (e *Engine) copyStep() {
	c := e.copying
	e.mu.Lock()
	start := time.Now()
	done, err := c.snap.CopyStep(e.stepBudget)
	d := time.Since(start)
	e.mu.Unlock()
	c.steps, c.longest = c.steps+1, max(c.longest, d)
	e.copySteps.Add(1)
	if err == nil && !done {
		return
	}
	e.copying = nil
	if err != nil {
		e.compacted(&compactResult{index: c.snap.Index, err: fmt.Errorf("engine: copy snapshot: %w", err)})
		return
	}
	e.log.Debug("snapshot copied", "index", c.snap.Index, "steps", c.steps, "longest_step", c.longest)
	go func() {
		err := e.writeSnapshot(c.snap, c.prev, c.pruned)
		e.compactDone <- &compactResult{index: c.snap.Index, pruned: c.pruned, err: err}
	}()
}

// prune records the finished runs past retention: older than Retention, or
// beyond KeepRuns per workflow (newest kept). Under the write lock.
func (e *Engine) prune(now int64) []string {
	cutoff := now - int64(e.cfg.Retention)
	kept := map[string]int{}
	var ids []string
	for i := len(e.state.RunList) - 1; i >= 0; i-- {
		r := e.state.RunList[i]
		if !r.Status.Finished() {
			continue
		}
		kept[r.Workflow]++
		if r.FinishedAt < cutoff || kept[r.Workflow] > e.cfg.KeepRuns {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if err := e.commit([]replay.Record{&replay.RunsPruned{IDs: ids, At: now}}); err != nil {
		e.failStop(err)
		return nil
	}
	e.log.Info("retention: pruned finished runs", "runs", len(ids))
	return ids
}

// writeSnapshot performs steps 2 to 4. It may run beside the loop: it only
// touches files and the WAL's front.
func (e *Engine) writeSnapshot(snap *replay.Snapshot, prev uint64, pruned []string) error {
	start := time.Now()
	if err := e.compactFault("start"); err != nil {
		return err
	}
	// The pruned runs' folders go first: their runs_pruned record is
	// durable, so no boot needs them again, and a snapshot that fails (a
	// full disk above all) must neither keep them while the daemon runs nor
	// go without the space they hold.
	e.removePruned(pruned)
	dir := Layout(e.cfg.DataDir).Snapshots()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("engine: create %s: %w", dir, err)
	}
	// snapshots/ is a name in the data folder: durable only once the data
	// folder is fsynced. Without this, a power cut after the truncation of
	// step 3 could keep the truncated log and lose the folder holding the
	// snapshot it relies on (found by fuzz/TestPowerLoss).
	if err := wal.SyncDir(e.cfg.DataDir); err != nil {
		return fmt.Errorf("engine: fsync %s: %w", e.cfg.DataDir, err)
	}
	if err := e.compactFault("after-mkdir"); err != nil {
		return err
	}
	path := Layout(e.cfg.DataDir).Snapshot(snap.Index)
	if err := e.writeSnapshotFile(path, snap); err != nil {
		return err
	}
	if err := e.compactFault("before-rename"); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		os.Remove(path + ".tmp") // the next try, at another index, would leave another
		return fmt.Errorf("engine: rename snapshot: %w", err)
	}
	if err := wal.SyncDir(dir); err != nil {
		return fmt.Errorf("engine: fsync %s: %w", dir, err)
	}
	if err := e.compactFault("after-rename"); err != nil {
		return err
	}
	if err := e.truncateTo(prev); err != nil {
		return err
	}
	if err := e.compactFault("after-truncate"); err != nil {
		return err
	}
	e.removeOld(prev)
	e.log.Info("snapshot written", "index", snap.Index, "runs", len(snap.Runs), "took", time.Since(start))
	return nil
}

func (e *Engine) writeSnapshotFile(path string, snap *replay.Snapshot) error {
	f, err := os.OpenFile(path+".tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("engine: create snapshot: %w", err)
	}
	err = snap.Encode(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("engine: write snapshot %s: %w", path, err)
	}
	return nil
}

// truncateTo drops the log's entries up to index prev, keeping one
// snapshot's worth of log so that the previous snapshot stays usable. It
// runs on the background writer: the log is read under the lock, which
// recovery from a full disk holds while it replaces it (a truncation of
// the log it closed then fails, and the next compaction tries again).
func (e *Engine) truncateTo(prev uint64) error {
	e.mu.RLock()
	l := e.wal
	e.mu.RUnlock()
	first, err := l.FirstIndex()
	if err != nil || prev == 0 || prev+1 <= first {
		return err
	}
	return l.TruncateFront(prev + 1)
}

// removeOld removes snapshots older than prev.
func (e *Engine) removeOld(prev uint64) {
	idxs, _ := snapshotIndexes(e.cfg.DataDir)
	for _, idx := range idxs {
		if idx < prev {
			os.Remove(Layout(e.cfg.DataDir).Snapshot(idx))
		}
	}
	wal.SyncDir(Layout(e.cfg.DataDir).Snapshots())
}

// removePruned removes the logs/ folders and the work/ scratch of runs
// whose runs_pruned record is durable. A crash before it ends leaves files
// that boot removes (sweepRunFolders).
func (e *Engine) removePruned(pruned []string) {
	l := Layout(e.cfg.DataDir)
	gone := make(map[string]bool, len(pruned))
	for _, id := range pruned {
		os.RemoveAll(filepath.Join(l.logs(), id))
		gone[id] = true
	}
	if len(gone) > 0 {
		l.removeRunScratch(func(run string) bool { return gone[run] }, false)
	}
}

func (e *Engine) compactFault(step string) error {
	if e.cfg.CompactFault == nil {
		return nil
	}
	return e.cfg.CompactFault(step)
}

// compacted handles the background writer's report (loop goroutine).
func (e *Engine) compacted(r *compactResult) {
	e.compacting = false
	e.lagMax = max(e.lagMax, e.logBytes)
	defer e.notify() // tests wait on Changed for a compaction's end
	if r.err != nil {
		e.log.Error("compaction failed; the log keeps growing until the next try", "err", r.err)
		return
	}
	e.snapIndex = r.index
	e.compactions.Add(1)
}

// Compact writes a snapshot now and truncates the log, synchronously: for a
// clean shutdown and `orkwal wal compact`. The loop must not be running.
func (e *Engine) Compact() error { return e.snapshotNow(true) }

// compactAtBoot snapshots before the engine serves when the log the boot
// replayed since the newest snapshot is CompactBytes or more. Without it a
// daemon whose lives are shorter than a compaction (a crash loop, a box
// that keeps losing power) never completes one: every boot replays the log
// of every earlier life, and boots get longer with each crash. With it, a
// boot replays at most what one life logged since the newest snapshot
// (docs/format.md, "Snapshot and truncation"): nothing else is appended
// while it runs. It prunes nothing: a boot writes only the records of its
// interrupted attempts (the power-loss harness holds it to that); Close
// prunes instead, even when nothing was logged since (bootSnapshotted), so
// that a daemon stopped right after such a boot keeps no more finished
// runs than the settings allow. A failure (a full disk) is logged and the
// boot goes on: the log is whole, and the loop's compactions try again.
func (e *Engine) compactAtBoot() {
	if e.cfg.CompactBytes <= 0 || e.logBytes < e.cfg.CompactBytes {
		return
	}
	e.log.Info("the log since the newest snapshot is past --compact-bytes: snapshot before serving",
		"bytes", e.logBytes, "compact_bytes", e.cfg.CompactBytes)
	if err := e.snapshotNow(false); err != nil {
		e.log.Error("snapshot at boot failed; the loop will try again", "err", err)
		return
	}
	e.bootSnapshotted = true
}

// snapshotNow writes a snapshot of the state at the last index, pruning
// first if prune is set, and truncates the log. The loop must not be
// running.
func (e *Engine) snapshotNow(prune bool) error {
	e.mu.Lock()
	var pruned []string
	if prune {
		pruned = e.prune(e.cfg.Clock.Now().UnixNano())
	}
	last := e.wal.LastIndex()
	var snap *replay.Snapshot
	if last != e.snapIndex {
		snap = e.state.Snapshot(last)
	}
	e.mu.Unlock()
	if snap == nil {
		return nil
	}
	if err := e.writeSnapshot(snap, e.snapIndex, pruned); err != nil {
		return err
	}
	e.snapIndex, e.logBytes = last, 0
	e.compactions.Add(1)
	return nil
}
