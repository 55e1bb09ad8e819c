package fuzz

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/wal"
)

// Checks of the power-loss disk model itself (disk_test.go).

// TestIdleCrashIgnoresWritesAfterTheLastIOPoint: an idle power cut
// (diskModel.crash) may come while an append is under way, its bytes
// landing in the tail after the model's last I/O point. A read of the
// live file then can see a sector half old, half new: the old zeros at
// the entry's length prefix, the new bytes after it, which no power cut
// can leave (the disk writes the sector whole or not at all) and which the
// wal rightly refuses ("zero length; not a torn write"). The test puts the
// file in exactly the state such a read sees, after the frame's write and
// before the model hears of it, cuts the power idle there, and checks that
// the image is one a power cut can leave: it verifies, and holds a prefix
// of the frames written, every committed one included. A model that builds
// the image from the live file fails it for most seeds.
func TestIdleCrashIgnoresWritesAfterTheLastIOPoint(t *testing.T) {
	for _, step := range []int{128, 700} {
		for sd := uint64(0); sd < 16; sd++ {
			t.Run(fmt.Sprintf("pad%d/seed%d", step, sd), func(t *testing.T) {
				idleCrashMidWrite(t, step, sd)
			})
		}
	}
}

func idleCrashMidWrite(t *testing.T, step int, sd uint64) {
	m, walDir, image := modelledFolder(t, sd, 1)
	const frames = 6 // the last is the one written after the last I/O point
	var mixAt int64 = -1
	fault := func(op wal.Op, index uint64) error {
		if op == wal.OpWrite && index == frames {
			// The frame is in the file; the model has not seen it. Make the
			// file read as a read racing the write would see it, then cut.
			if err := zeroByteAt(walDir, mixAt); err != nil {
				t.Error(err)
			}
			m.crash()
		}
		return m.fault(op, index)
	}
	l, err := wal.Open(walDir, wal.Options{SegmentSize: 4096, PadStep: step, Fault: fault, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want [][]byte
	for i := 1; i <= frames; i++ {
		rec := bytes.Repeat([]byte{byte('a' + i)}, 150+37*i) // entries end mid-sector
		if i == frames {
			mixAt = tailEntriesEnd(t, walDir)
		}
		if _, err := l.Append([][]byte{rec}); (err == nil) != (i < frames) {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, rec)
	}
	if m.crashErr != nil {
		t.Fatalf("the model failed to cut the power: %v", m.crashErr)
	}
	if m.res.committed != frames-1 {
		t.Fatalf("the model counts %d frames committed, want %d", m.res.committed, frames-1)
	}
	checkImageLog(t, filepath.Join(image, "wal"), want, frames-1)
}

// TestModelReportsALostDurableEntry: a segment that lost entries the
// model counts durable (fsynced) stops the model at the next hook call,
// out of step with the files: a harness failure, never an image.
func TestModelReportsALostDurableEntry(t *testing.T) {
	dataDir := t.TempDir()
	walDir := filepath.Join(dataDir, "wal")
	m, err := newDiskModel(dataDir, t.TempDir(), 0, rand.New(rand.NewPCG(1, 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	fault := func(op wal.Op, index uint64) error {
		if op == wal.OpWrite && index == 3 {
			// Frames 1 and 2 are durable: the disk loses them.
			segs, err := listSegs(walDir)
			if err != nil || os.Truncate(filepath.Join(walDir, segs[len(segs)-1].name), 0) != nil {
				t.Errorf("emptying the tail: %v", err)
			}
		}
		return m.fault(op, index)
	}
	l, err := wal.Open(walDir, wal.Options{SegmentSize: 4096, Fault: fault, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 1; i <= 3; i++ {
		if _, err := l.Append([][]byte{[]byte("frame")}); (err == nil) != (i < 3) {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	if m.crashErr == nil || !strings.Contains(m.crashErr.Error(), "out of step") {
		t.Fatalf("the model's error is %v, want it out of step", m.crashErr)
	}
}

// checkImageLog checks that the wal folder of an image verifies (a torn
// tail is allowed: boot cuts it) and holds a prefix of want, at least its
// first committed frames.
func checkImageLog(t *testing.T, dir string, want [][]byte, committed int) {
	t.Helper()
	var got [][]byte
	torn, err := wal.VerifyDirFrom(dir, 0, func(_ uint64, recs [][]byte) error {
		got = append(got, bytes.Join(recs, nil))
		return nil
	})
	if err != nil {
		t.Fatalf("the image is one no power cut can leave: %v", err)
	}
	if len(got) < committed || len(got) > len(want) {
		t.Fatalf("the image holds %d frames, want %d to %d (torn tail: %v)", len(got), committed, len(want), torn)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d of the image differs from the one written", i+1)
		}
	}
}

// tailEntriesEnd is where the entries of a wal folder's newest segment end.
func tailEntriesEnd(t *testing.T, walDir string) int64 {
	t.Helper()
	segs, err := listSegs(walDir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments of %s: %v %v", walDir, segs, err)
	}
	s := segs[len(segs)-1]
	data, err := os.ReadFile(filepath.Join(walDir, s.name))
	if err != nil {
		t.Fatal(err)
	}
	return validPrefix(data, s.first)
}

// zeroByteAt sets the byte at off of the newest segment of walDir to zero.
func zeroByteAt(walDir string, off int64) error {
	segs, err := listSegs(walDir)
	if err != nil || len(segs) == 0 {
		return fmt.Errorf("segments of %s: %v %w", walDir, segs, err)
	}
	f, err := os.OpenFile(filepath.Join(walDir, segs[len(segs)-1].name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt([]byte{0}, off)
	return err
}

// TestCutAfterATruncationKeepsOnlyWhatItSaw: a compaction's truncation
// runs beside the appends (wal.TruncateFront removes segments without the
// write lock), and the model's after-truncate point reads the folder's
// listing to learn what the truncation removed. The log's front is
// truncated, then frame W is written (into the tail, or rolling to a new
// segment) while the compaction reaches after-truncate:
//
//   - before the model heard of W's write, the power cut there: the image
//     holds the truncated log (the removed segment gone) up to the frame
//     before W, never W, whose bytes are in the file but came after the
//     last I/O point (the listing may show W's new segment: the model
//     takes no segment and no byte from it);
//   - after the model saw W written but before its fsync, the power cut
//     at after-truncate or at W's fsync: W is not committed, and its
//     bytes are no more durable for the truncation's fsync of wal/ (a
//     folder's fsync makes no file's bytes durable): some seeds' images
//     lose W. A model that took the truncation's fsync for every byte of
//     its copy (as it did, relying on the harness to run compactions
//     alone) keeps W in every image, and at after-truncate counts it
//     committed.
func TestCutAfterATruncationKeepsOnlyWhatItSaw(t *testing.T) {
	for _, roll := range []bool{false, true} {
		for _, c := range []struct {
			name  string
			seenW bool   // the model saw W's write before after-truncate
			cut   wal.Op // the step cut
		}{
			{"W-unseen/cut-after-truncate", false, afterTruncate},
			{"W-seen/cut-after-truncate", true, afterTruncate},
			{"W-seen/cut-at-W-fsync", true, wal.OpSync},
		} {
			t.Run(fmt.Sprintf("roll=%v/%s", roll, c.name), func(t *testing.T) {
				lost := 0
				for sd := uint64(0); sd < 8; sd++ {
					if !truncateThenWrite(t, roll, c.seenW, c.cut, sd) {
						lost++
					}
				}
				if c.seenW && lost == 0 {
					t.Fatalf("every image kept W, written and not fsynced at the cut: the model counts its bytes durable")
				}
			})
		}
	}
}

// afterTruncate is the compaction's point after the WAL's front
// truncation (engine/compact.go).
const afterTruncate wal.Op = "after-truncate"

// truncateThenWrite plays the sequence of TestCutAfterATruncationKeepsOnlyWhatItSaw
// with seed sd: frames of 200 bytes in segments of 512 (three a segment),
// the front truncated to index 5 (segment 1 goes), then W. It checks the
// image and reports whether it holds W.
func truncateThenWrite(t *testing.T, roll, seenW bool, cut wal.Op, sd uint64) bool {
	t.Helper()
	m, walDir, image := modelledFolder(t, sd, 2)
	frames := 7 // the tail holds frame 7 alone: W fits in it
	if roll {
		frames = 9 // the tail holds 7 to 9, full: W starts segment 10
	}
	w := uint64(frames + 1)
	point := func(step wal.Op) { // the compaction reaches a point, cut if it is cut
		cutIfNext(m, step == cut)
		m.compactFault(string(step))
	}
	fault := func(op wal.Op, index uint64) error {
		if index != w {
			return m.fault(op, index)
		}
		if op == wal.OpWrite && !seenW {
			point(afterTruncate) // W is in the file; the model has not seen it
		}
		cutIfNext(m, op == cut)
		err := m.fault(op, index)
		if op == wal.OpWrite && seenW {
			point(afterTruncate)
		}
		return err
	}
	l, err := wal.Open(walDir, wal.Options{SegmentSize: 512, PadStep: 128, Fault: fault, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want [][]byte
	for i := 1; i <= frames; i++ {
		rec := bytes.Repeat([]byte{byte('a' + i)}, 200)
		if _, err := l.Append([][]byte{rec}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		want = append(want, rec)
	}
	if err := l.TruncateFront(5); err != nil {
		t.Fatal(err)
	}
	want = append(want, []byte("W, written beside the truncation"))
	if _, err := l.Append(want[w-1:]); err == nil {
		t.Fatal("W's append returned nil after the power cut")
	}
	if _, err := os.Stat(filepath.Join(walDir, segName(w))); (err == nil) != roll {
		t.Fatalf("segment %d exists: %v, want %v", w, err == nil, roll)
	}
	if m.crashErr != nil {
		t.Fatalf("the model failed to cut the power: %v", m.crashErr)
	}
	if m.res.committed != uint64(frames) {
		t.Fatalf("the model counts %d frames committed, want %d (W's fsync never came)", m.res.committed, frames)
	}
	first, last := imageRange(t, filepath.Join(image, "wal"), want)
	if first != 4 || last < uint64(frames) {
		t.Fatalf("the image holds frames %d to %d, want 4 (segment 1 truncated) to at least %d", first, last, frames)
	}
	if !seenW && last == w {
		t.Fatalf("the image holds W, written after the last I/O point before the cut")
	}
	return last == w
}

// modelledFolder is a fresh data folder (FORMAT written) under a disk
// model that cuts only when told, its draws seeded with (sd, stream); it
// returns the model, the wal folder and the image's folder.
func modelledFolder(t *testing.T, sd, stream uint64) (m *diskModel, walDir, image string) {
	t.Helper()
	dataDir, image := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dataDir, engine.FormatFile), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := newDiskModel(dataDir, image, 0, rand.New(rand.NewPCG(sd, stream)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, filepath.Join(dataDir, "wal"), image
}

// cutIfNext makes the model's next step the cut when cut is set.
func cutIfNext(m *diskModel, cut bool) {
	if cut {
		m.mu.Lock()
		m.crashAt = m.steps + 1
		m.mu.Unlock()
	}
}

// imageRange checks that the wal folder of an image verifies (a torn tail
// is allowed: boot cuts it) and that each frame in it is the one written at
// its index (want, from index 1); it returns the first and last indexes.
func imageRange(t *testing.T, dir string, want [][]byte) (first, last uint64) {
	t.Helper()
	_, err := wal.VerifyDirFrom(dir, 0, func(index uint64, recs [][]byte) error {
		switch {
		case first == 0:
			first = index
		case index != last+1:
			return fmt.Errorf("frame %d after %d", index, last)
		}
		if index > uint64(len(want)) || !bytes.Equal(bytes.Join(recs, nil), want[index-1]) {
			return fmt.Errorf("frame %d differs from the one written", index)
		}
		last = index
		return nil
	})
	if err != nil {
		t.Fatalf("the image is one no power cut can leave: %v", err)
	}
	return first, last
}
