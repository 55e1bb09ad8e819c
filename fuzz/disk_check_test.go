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
	dataDir, image := t.TempDir(), t.TempDir()
	walDir := filepath.Join(dataDir, "wal")
	if err := os.WriteFile(filepath.Join(dataDir, engine.FormatFile), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := newDiskModel(dataDir, image, 0, rand.New(rand.NewPCG(sd, 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
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
