package fuzz

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/orkwal/orkwal/replay"
)

// walTail follows a live daemon's WAL folder from outside the process, the
// way an auditor would: it reads every frame exactly once, in index order,
// as soon as it is written (a frame is taken only once its checksum and
// index are right, so a frame being written is never taken half), and folds
// them all into its own state, from index 1. Compaction truncates the log's
// front, so the tail must read each frame before the second compaction
// after it removes it; it polls every few milliseconds while compaction
// needs seconds, and a frame it never saw (the log starts after the next
// index it wants) is a failure of the harness, reported as such.
//
// What it gives the kill -9 checks:
//   - the fold of the whole history, whose hash must equal the state the
//     stopped daemon's snapshot and log replay to (a snapshot that dropped or
//     invented anything, or a truncation that lost a frame, shows here);
//   - the runs pruned by retention (runs_pruned), with their final status
//     and tasks captured just before the prune: an acknowledged run missing
//     at the end must be one of them, and they are checked like the others;
//   - every cron_fired record, so that fire times can be checked across
//     every kill: none twice, none missing.
type walTail struct {
	dir string

	mu     sync.Mutex
	st     *replay.State
	next   uint64 // index of the next frame to fold
	seg    string // segment file holding frame next ("" = look it up)
	segIdx uint64 // index of the frame at off in seg
	off    int64  // byte offset of frame segIdx in seg
	frames int64
	pruned map[string]*replay.Run // run id → the run as it was when pruned
	born   map[string]uint64      // run id → index of the frame that created it
	trail  map[string][]string    // run id → "index:kind" of every record naming it
	fires  map[string][]cronFire  // by workflow, in log order
	err    error                  // a definite failure (a record that does not fold)
	gapFor time.Time              // since when the log has started after next

	// archive holds a copy of every frame folded, in order, as one
	// segment file from index 1: a data folder of the whole history, which
	// `orkwal wal inspect --data` reads when a check fails.
	archive    *os.File
	archiveDir string
}

type cronFire struct {
	at    int64 // ScheduledAt
	run   string
	skip  string
	index uint64
}

func newWALTail(dataDir, archiveDir string) (*walTail, error) {
	if err := os.MkdirAll(filepath.Join(archiveDir, "wal"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(archiveDir, "wal", fmt.Sprintf("%020d", 1)))
	if err != nil {
		return nil, err
	}
	return &walTail{dir: filepath.Join(dataDir, "wal"), st: replay.New(), next: 1,
		pruned: map[string]*replay.Run{}, fires: map[string][]cronFire{}, born: map[string]uint64{}, trail: map[string][]string{},
		archive: f, archiveDir: archiveDir}, nil
}

// poll folds every complete frame written since the last poll. It returns
// an error only for a definite failure; a folder caught in the middle of a
// truncation is read again at the next poll.
func (w *walTail) poll() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	for {
		more, err := w.step()
		if err != nil {
			w.err = err
			return err
		}
		if !more {
			return nil
		}
	}
}

// step reads what follows the current position; more says another segment
// is ready to be read at once.
func (w *walTail) step() (bool, error) {
	des, err := os.ReadDir(w.dir)
	if err != nil {
		return false, nil // not created yet
	}
	var segs []segFile
	for _, de := range des {
		if first, ok := segIndex(de.Name()); ok {
			segs = append(segs, segFile{name: de.Name(), first: first})
		}
	}
	if len(segs) == 0 {
		return false, nil
	}
	// os.ReadDir sorts by name, and names are zero-padded indexes.
	if w.seg != "" && !hasSeg(segs, w.seg) {
		w.seg = "" // a truncation removed it: look it up again
	}
	if w.seg == "" {
		at := -1
		for i, s := range segs {
			if s.first <= w.next {
				at = i
			}
		}
		if at < 0 {
			if w.gapFor.IsZero() {
				w.gapFor = time.Now()
			} else if time.Since(w.gapFor) > 5*time.Second {
				return false, fmt.Errorf("harness: the WAL tail wants index %d but the log starts at %d: "+
					"compaction truncated frames the tail never read", w.next, segs[0].first)
			}
			return false, nil
		}
		w.gapFor = time.Time{}
		w.seg, w.segIdx, w.off = segs[at].name, segs[at].first, 0
	}
	data, err := readFrom(filepath.Join(w.dir, w.seg), w.off)
	if err != nil {
		w.seg = ""
		return false, nil // removed meanwhile
	}
	pos := 0
	for pos < len(data) {
		recs, n := nextFrame(data[pos:], w.segIdx)
		if n == 0 {
			break // a frame being written, or a torn tail a boot will cut
		}
		if w.segIdx >= w.next {
			if w.segIdx != w.next {
				return false, fmt.Errorf("harness: the WAL tail wants index %d, found %d", w.next, w.segIdx)
			}
			if err := w.fold(w.segIdx, recs); err != nil {
				return false, err
			}
			if _, err := w.archive.Write(data[pos : pos+n]); err != nil {
				return false, fmt.Errorf("harness: archive frame %d: %w", w.segIdx, err)
			}
			w.next++
		}
		w.segIdx++
		pos += n
	}
	w.off += int64(pos)
	if pos == len(data) {
		// The whole file read: go on with the next segment if it starts here.
		for _, s := range segs {
			if s.first == w.segIdx && s.name != w.seg && w.segIdx == w.next {
				w.seg, w.off = s.name, 0
				return true, nil
			}
		}
	}
	return false, nil
}

func hasSeg(segs []segFile, name string) bool {
	for _, s := range segs {
		if s.name == name {
			return true
		}
	}
	return false
}

func readFrom(path string, off int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// nextFrame decodes the length-prefixed frame at the start of data, which
// must be the frame at index (docs/format.md), and returns its records and
// the bytes it takes; n = 0 when data does not start with a whole valid
// frame.
func nextFrame(data []byte, index uint64) (recs [][]byte, n int) {
	size, k := binary.Uvarint(data)
	if k <= 0 || size == 0 || size > uint64(len(data)-k) {
		return nil, 0
	}
	recs, ok := frameRecords(data[k:k+int(size)], index)
	if !ok {
		return nil, 0
	}
	for i, r := range recs {
		recs[i] = bytes.Clone(r)
	}
	return recs, k + int(size)
}

// fold applies one frame, noting pruned runs and cron fires first.
func (w *walTail) fold(index uint64, recs [][]byte) error {
	w.frames++
	for i, p := range recs {
		r, err := replay.Decode(p)
		if err != nil {
			return fmt.Errorf("WAL index %d record %d does not decode: %w", index, i, err)
		}
		if id := replay.RunOf(r); id != "" {
			w.trail[id] = append(w.trail[id], fmt.Sprintf("%d:%s", index, r.Kind()))
		}
		switch r := r.(type) {
		case *replay.RunCreated:
			w.born[r.ID] = index
		case *replay.RunsPruned:
			for _, id := range r.IDs {
				w.trail[id] = append(w.trail[id], fmt.Sprintf("%d:%s", index, r.Kind()))
				if run := w.st.Runs[id]; run != nil {
					w.pruned[id] = run
				}
			}
		case *replay.CronFired:
			w.fires[r.Workflow] = append(w.fires[r.Workflow], cronFire{at: r.ScheduledAt, run: r.RunID, skip: r.Skipped, index: index})
		}
		if err := w.st.Apply(r); err != nil {
			return fmt.Errorf("WAL index %d record %d (%s) does not apply to the fold of every earlier frame: %w", index, i, r.Kind(), err)
		}
	}
	return nil
}

// follow polls until stop is closed, then returns the first failure.
func (w *walTail) follow(stop <-chan struct{}) error {
	for {
		if err := w.poll(); err != nil {
			return err
		}
		select {
		case <-stop:
			return w.poll()
		case <-time.After(5 * time.Millisecond): // an external process's files: poll
		}
	}
}
