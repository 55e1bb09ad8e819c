package fuzz

import (
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/orkwal/orkwal/wal"
)

// The disk model of compaction (engine/compact.go): a snapshot written to
// snapshots/<name>.snap.tmp, fsynced, renamed, the folder fsynced; the WAL's
// front truncated (whole segments removed, oldest first, the folder fsynced
// after each); older snapshots removed and the folder fsynced again. engine.Config.CompactFault names the points between those
// steps, and the model credits exactly the fsyncs that precede each one:
//
//   - begin (the loop, under its lock): a compaction was decided. The
//     harness holds the background writer at start until the engine is
//     otherwise idle, so that a compaction never overlaps the workload's
//     appends and every I/O step is the same for a seed;
//   - start: nothing written yet;
//   - before-rename: the .tmp file's bytes are durable (fsynced), its name
//     is not (no folder fsync yet);
//   - after-rename: snapshots/ was fsynced: its listing is durable;
//   - the WAL's OpTruncate: before the truncation;
//   - after-truncate: wal/ was fsynced: the segments the truncation
//     removed are gone (it only removes whole files); what was durable of
//     the others stays so, no more (an append beside it keeps its own
//     fsyncs);
//   - done (the harness saw the compaction end): the old snapshots'
//     removal was fsynced.
//
// snapshots/ itself is a name in the data folder: it is durable if it
// existed when the engine booted (boot's wal.Open fsyncs the data folder),
// or once the data folder was fsynced after it was created (the
// after-mkdir point).
//
// A power cut keeps a snapshot file that is durable, may keep or lose one
// created or removed since the last fsync of snapshots/ (the .tmp being
// written, a stale .tmp boot removed, an old snapshot being removed), and
// may lose snapshots/ whole while its own name is not durable.

// readSnapDir reads every file of snapshots/ (nil if there is none).
func readSnapDir(dataDir string) (map[string][]byte, bool) {
	dir := filepath.Join(dataDir, "snapshots")
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	out := map[string][]byte{}
	for _, de := range des {
		if data, err := os.ReadFile(filepath.Join(dir, de.Name())); err == nil {
			out[de.Name()] = data
		}
	}
	return out, true
}

// compactFault is the engine's CompactFault.
func (m *diskModel) compactFault(step string) error {
	m.mu.Lock()
	if m.crashed {
		m.mu.Unlock()
		return errCrash
	}
	switch step {
	case "begin":
		m.begun++ // a notification, not an I/O step
		m.mu.Unlock()
		return nil
	case "start":
		if m.started < m.begun {
			m.started++
			n := m.started
			for m.released < n && !m.crashed {
				m.gate.Wait()
			}
			if m.crashed {
				m.mu.Unlock()
				return errCrash
			}
		}
	}
	defer m.mu.Unlock()
	m.steps++
	m.compactSteps++
	// The fsync each point names came before it: credit it, then cut.
	switch step {
	case "after-mkdir":
		m.snapDirDurable = true
	case "after-rename":
		m.snapDurable, _ = readSnapDir(m.dataDir)
	case "after-truncate":
		if err := m.walSynced(); err != nil {
			m.crashErr = err
			m.crashLocked(wal.Op(step), 0)
			return errCrash
		}
	}
	if m.steps == m.crashAt {
		m.crashLocked(wal.Op(step), 0)
		return errCrash
	}
	return nil
}

// pendingCompactions is how many compactions began and were not released.
func (m *diskModel) pendingCompaction() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.released < m.begun
}

// release lets the writer of every compaction begun so far run.
func (m *diskModel) release() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = m.begun
	m.gate.Broadcast()
	return m.begun
}

// compactionDone records that the compactions released so far finished:
// removeOld's fsync of snapshots/ made its listing durable.
func (m *diskModel) compactionDone() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.crashed {
		m.snapDurable, _ = readSnapDir(m.dataDir)
	}
}

// walSynced: wal/ was fsynced after a truncation: the segments it removed
// are gone for good, from the model's copy too. The folder's listing is
// read here, at the point (the truncation is over), and only to learn
// which of the copy's segments went: nothing but that truncation removes a
// segment, so the listing can drop a segment from the copy, never add one
// or a byte to it (an append may be under way: a segment it created, a
// frame it wrote since the last hook call, are not in the copy and stay
// out of the image). Every other segment's name and bytes are exactly as
// durable as before: the fsync of wal/ after a removal makes no file's
// bytes durable, so a frame written and not yet fsynced beside the
// truncation stays unsynced (kept or lost at a cut).
func (m *diskModel) walSynced() error {
	live, err := listSegs(m.walDir)
	if err != nil {
		return err
	}
	here := make(map[string]bool, len(live))
	for _, s := range live {
		here[s.name] = true
	}
	m.seen.segs = slices.DeleteFunc(m.seen.segs, func(s segFile) bool { return !here[s.name] })
	m.seen.forgetRemoved()
	for name := range m.durName {
		if !here[name] {
			delete(m.durName, name)
			delete(m.durSize, name)
			delete(m.durEnd, name)
		}
	}
	return nil
}

// buildSnapImage writes the post-crash snapshots/ into the image.
func (m *diskModel) buildSnapImage() error {
	cur, exists := readSnapDir(m.dataDir)
	if !exists && m.snapDurable == nil {
		return nil
	}
	if !m.snapDirDurable && m.rng.IntN(2) == 0 {
		m.res.modes = append(m.res.modes, "snapshots/: lost (its name in the data folder was never fsynced)")
		m.res.snapDirLost = true
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for n := range cur {
		names, seen[n] = append(names, n), true
	}
	for n := range m.snapDurable {
		if !seen[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	dst := filepath.Join(m.image, "snapshots")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		data, durable := m.snapDurable[n]
		now, present := cur[n]
		switch {
		case durable && present:
			data = now // snapshot files are never rewritten in place
		case durable: // removed since the last fsync of snapshots/
			if m.rng.IntN(2) == 0 {
				m.res.modes = append(m.res.modes, "snapshots/"+n+": removal lost")
			} else {
				continue
			}
		default: // created since: its bytes were fsynced before it could be seen here (.tmp at before-rename)
			if m.rng.IntN(2) == 0 {
				m.res.modes = append(m.res.modes, "snapshots/"+n+": new name lost")
				continue
			}
			data = now
		}
		if err := os.WriteFile(filepath.Join(dst, n), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
