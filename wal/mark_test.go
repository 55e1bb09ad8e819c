package wal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// markedLog writes a log of several segments and returns its folder, its
// segments and the index its mark names.
func markedLog(t *testing.T) (string, []segmentFile, uint64) {
	t.Helper()
	dir, segs := writtenLog(t, 300, 60)
	mark, err := readMark(dir)
	if err != nil || mark != segs[len(segs)-1].first || len(segs) < 3 {
		t.Fatalf("mark %d (%v), want the newest of %d segments", mark, err, len(segs))
	}
	return dir, segs, mark
}

// TestMarkedSegmentLostIsRefused: the newest segment, which holds
// acknowledged entries, deleted, zeroed or emptied: Open and VerifyDir
// refuse, naming it and changing nothing (before, the log just ended one
// segment earlier); cutting the log at its first index (the operator's
// `wal repair`) moves the mark back and Open goes on.
func TestMarkedSegmentLostIsRefused(t *testing.T) {
	for _, lose := range []string{"deleted", "zeroed", "emptied"} {
		t.Run(lose, func(t *testing.T) {
			dir, segs, mark := markedLog(t)
			newest := segs[len(segs)-1].path
			data, _ := os.ReadFile(newest)
			switch lose {
			case "deleted":
				os.Remove(newest)
			case "zeroed":
				os.WriteFile(newest, make([]byte, len(data)), 0o600)
			case "emptied":
				os.WriteFile(newest, nil, 0o600)
			}
			before, _ := os.ReadFile(segs[len(segs)-2].path)
			_, err := Open(dir, Options{Logger: quiet})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Segment != newest || ce.Index != mark || !strings.Contains(ce.Reason, "missing") {
				t.Fatalf("open: %v, want corruption naming %s, index %d", err, newest, mark)
			}
			if after, _ := os.ReadFile(segs[len(segs)-2].path); string(after) != string(before) {
				t.Fatal("a refused open changed the log")
			}
			if _, err := VerifyDir(dir, func(uint64, [][]byte) error { return nil }); !errors.As(err, &ce) || ce.Segment != newest {
				t.Fatalf("verify: %v, want corruption naming %s", err, newest)
			}
			if err := CutAt(dir, mark, CutFolder(dir, time.Now()), quiet); err != nil {
				t.Fatal(err)
			}
			l := openT(t, dir, 300)
			defer l.Close()
			if l.LastIndex() != mark-1 {
				t.Fatalf("after the cut the log ends at %d, want %d", l.LastIndex(), mark-1)
			}
		})
	}
}

// TestUnmarkedNewSegmentMayBeLost: a power cut after a new segment's file
// was created and before its first entry was durable leaves it empty (or
// gone) with the mark still on the segment before: a torn write, cut, and
// the log goes on. The mark moves once the new segment's first entry is
// durable, before Append returns.
func TestUnmarkedNewSegmentMayBeLost(t *testing.T) {
	dir, segs, _ := markedLog(t)
	l := openT(t, dir, 300)
	last := l.LastIndex()
	l.Close()
	next := segmentName(last + 1)
	if err := os.WriteFile(filepath.Join(dir, next), make([]byte, 512), 0o600); err != nil {
		t.Fatal(err)
	}
	l = openT(t, dir, 300)
	if l.LastIndex() != last {
		t.Fatalf("last index %d, want %d", l.LastIndex(), last)
	}
	appendRecs(t, l, 0, 1) // the empty segment's first entry
	l.Close()
	if m, _ := readMark(dir); m != last+1 {
		t.Fatalf("mark %d after the first entry of segment %d, want it (segments %d)", m, last+1, len(segs))
	}
}

// TestOpenMarksALegacyFolder: a folder written before the mark existed
// gets one at Open, naming the segment that holds the last entry.
func TestOpenMarksALegacyFolder(t *testing.T) {
	dir, segs, mark := markedLog(t)
	os.Remove(filepath.Join(dir, markName(mark)))
	l := openT(t, dir, 300)
	l.Close()
	if m, _ := readMark(dir); m != segs[len(segs)-1].first {
		t.Fatalf("mark %d after Open, want %d", m, segs[len(segs)-1].first)
	}
}
