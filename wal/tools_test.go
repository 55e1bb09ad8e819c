package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corruptFrame flips a byte inside frame index of a fresh multi-segment log.
func corruptLog(t *testing.T, frames int, bad uint64) (string, []segmentFile) {
	t.Helper()
	dir := t.TempDir()
	l := openT(t, dir, 120)
	for i := 0; i < frames; i++ {
		l.Append([][]byte{rec(i)})
	}
	l.Close()
	segs, _ := listSegments(dir)
	for _, s := range segs {
		data, _ := os.ReadFile(s.path)
		off, err := offsetOf(data, s.first, bad)
		if s.first > bad || err != nil || int(off) >= len(data) {
			continue
		}
		data[off+5] ^= 0xff
		os.WriteFile(s.path, data, 0o644)
		return dir, segs
	}
	t.Fatalf("frame %d not found", bad)
	return "", nil
}

func TestVerifyDirReportsCorruptionAndTornTail(t *testing.T) {
	dir, _ := corruptLog(t, 30, 7)
	n := 0
	_, err := VerifyDir(dir, func(uint64, [][]byte) error { n++; return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Index != 7 || n != 6 {
		t.Fatalf("verify: %v after %d frames, want corruption at index 7 after 6", err, n)
	}

	torn := t.TempDir()
	l := openT(t, torn, 0)
	for i := 0; i < 5; i++ {
		l.Append([][]byte{rec(i)})
	}
	l.Close()
	seg := filepath.Join(torn, "00000000000000000001")
	data, _ := os.ReadFile(seg)
	data = data[:entriesEndOf(t, segmentFile{path: seg, first: 1})] // less the padding
	os.WriteFile(seg, data[:len(data)-3], 0o644)
	tt, err := VerifyDir(torn, func(uint64, [][]byte) error { return nil })
	if err != nil || tt == nil || tt.Index != 5 {
		t.Fatalf("verify of a torn tail: torn=%v err=%v, want torn at index 5", tt, err)
	}
	if after, _ := os.ReadFile(seg); len(after) != len(data)-3 {
		t.Fatal("verify changed the log")
	}
}

func TestCutAtRemovesFromIndexAndKeepsACopy(t *testing.T) {
	dir, segs := corruptLog(t, 30, 7)
	keep := CutFolder(dir, time.Now())
	if err := CutAt(dir, 7, keep, quiet); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dir)
	if len(got) != 6 || string(got[5]) != string(rec(5)) {
		t.Fatalf("after cut: %d records, want 6", len(got))
	}
	kept, _ := os.ReadDir(keep)
	var removed int
	for _, s := range segs {
		if s.first > 7 {
			removed++
		}
	}
	if len(kept) != removed+1 {
		t.Fatalf("kept %d files, want the cut segment's tail and %d later segments", len(kept), removed)
	}
	l := openT(t, dir, 120)
	defer l.Close()
	if idx, err := l.Append([][]byte{[]byte("next")}); err != nil || idx != 7 {
		t.Fatalf("append after cut: index %d err %v, want 7", idx, err)
	}
	if err := CutAt(dir, 99, CutFolder(dir, time.Now()), quiet); err == nil {
		t.Fatal("cut past the end succeeded")
	}
}

// TestTornTailCopiesAreBounded: every crash during a write leaves a torn
// tail that Open cuts and keeps a copy of; a daemon that keeps crashing must
// not fill its disk with them (found by the kill -9 torture: 15 MB of copies
// after 300 kills with large frames). Only the newest KeepBroken stay.
func TestTornTailCopiesAreBounded(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < KeepBroken+5; i++ {
		l, err := Open(dir, Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append([][]byte{[]byte(fmt.Sprintf("record %d", i))}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		segs, err := listSegments(dir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0x40, Version, byte(i + 2), 1}) // frame i+2 cut short by a crash (the file's end)
		f.Close()
	}
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.CutBytes() == 0 {
		t.Fatal("the last torn tail was not cut")
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "*.broken-*"))
	if len(copies) != KeepBroken {
		t.Fatalf("%d torn-tail copies after %d cuts, want the newest %d", len(copies), KeepBroken+5, KeepBroken)
	}
}

// TestStaleTruncationTempRemoved: a crash inside a front truncation can
// leave tidwall/wal's "<index>.START.TEMP" (written before its rename to
// .START), which tidwall's Open ignores; Open removes it, and the log is
// whole.
func TestStaleTruncationTempRemoved(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := l.Append([][]byte{[]byte("r")}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	temp := filepath.Join(dir, "00000000000000000002.START.TEMP")
	if err := os.WriteFile(temp, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Fatalf("the stale truncation temp file is still there: %v", err)
	}
	if l.LastIndex() != 3 {
		t.Fatalf("last index %d, want 3", l.LastIndex())
	}
}

// TestCutAtInterruptedLeavesAPrefix: a cut that stops part way (here a
// segment that cannot be removed; a crash stops it the same way) leaves a
// log that is whole up to its tail, a prefix of what it was, which Open
// accepts; the same cut run again completes it.
func TestCutAtInterruptedLeavesAPrefix(t *testing.T) {
	dir, _ := writtenLog(t, 120, 40)
	segs, _ := listSegments(dir)
	if len(segs) < 4 {
		t.Fatalf("%d segments, want 4 or more", len(segs))
	}
	const index = 5
	removals := 0
	ioHook = func(c ioCall) error {
		if c.kind == ioRemove {
			if removals++; removals == 2 {
				return errors.New("injected: remove failed")
			}
		}
		return nil
	}
	defer func() { ioHook = nil }()
	if err := CutAt(dir, index, CutFolder(dir, time.Now()), quiet); err == nil {
		t.Fatal("the cut did not report the failed removal")
	}
	l := openT(t, dir, 120)
	last := l.LastIndex()
	l.Close()
	if want := segs[len(segs)-1].first - 1; last != want {
		t.Fatalf("after the interrupted cut the log ends at %d, want %d: the end of the segment before the newest, whole", last, want)
	}
	if got := readAll(t, dir); uint64(len(got)) != last {
		t.Fatalf("%d records readable, want %d", len(got), last)
	}
	ioHook = nil
	if err := CutAt(dir, index, CutFolder(dir, time.Now()), quiet); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); len(got) != index-1 {
		t.Fatalf("after the cut run again: %d records, want %d", len(got), index-1)
	}
}

// TestTornTailCopyNamedBeforeTheCut: the folder is fsynced with the torn
// tail's .broken copy in it before the segment is truncated, so that a
// power cut cannot lose the copy of bytes the cut already removed.
func TestTornTailCopyNamedBeforeTheCut(t *testing.T) {
	dir, segs := writtenLog(t, 0, 3)
	seg := segs[len(segs)-1].path
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := entriesEndOf(t, segs[len(segs)-1])
	f.Truncate(end)
	f.WriteAt([]byte{0x40, Version, 4, 1}, int64(end)) // frame 4 cut short by a crash (the file's end)
	f.Close()
	before, _ := os.Stat(seg)
	var named bool // a folder fsync saw the copy while the segment was whole
	ioHook = func(c ioCall) error {
		if c.kind == ioDirSync {
			copies, _ := filepath.Glob(filepath.Join(dir, "*.broken-*"))
			now, _ := os.Stat(seg)
			named = named || (len(copies) == 1 && now.Size() == before.Size())
		}
		return nil
	}
	defer func() { ioHook = nil }()
	l := openT(t, dir, 0)
	defer l.Close()
	if l.CutBytes() == 0 {
		t.Fatal("the torn tail was not cut")
	}
	if !named {
		t.Error("no folder fsync between the copy's creation and the cut")
	}
}

// TestCutAtOnALegacyTruncation: a folder still holding an earlier
// version's interrupted front truncation (a .START file, which Open
// finishes) is read and cut as Open will see it. A cut planned on the older
// segments alone was undone by the next Open, which replaced them with
// the .START and brought back every entry the operator had cut.
func TestCutAtOnALegacyTruncation(t *testing.T) {
	dir, segs := writtenLog(t, 0, 20) // one segment, 1..20
	data, err := os.ReadFile(segs[0].path)
	if err != nil {
		t.Fatal(err)
	}
	off, err := offsetOf(data, 1, 11)
	if err != nil {
		t.Fatal(err)
	}
	start := filepath.Join(dir, "00000000000000000011.START")
	if err := os.WriteFile(start, data[off:], 0o644); err != nil {
		t.Fatal(err)
	}
	// Open will see 11..20, and so do the readers of a stopped folder.
	if first, err := FirstIndexDir(dir); err != nil || first != 11 {
		t.Fatalf("first index before Open: %d, %v; want 11", first, err)
	}
	var seen []uint64
	if err := ReplayDir(dir, 0, func(i uint64, _ [][]byte) error { seen = append(seen, i); return nil }); err != nil || len(seen) != 10 || seen[0] != 11 {
		t.Fatalf("replay before Open: %v, %v; want 11..20", seen, err)
	}
	// A cut before 11 is refused, changing nothing.
	if err := CutAt(dir, 5, CutFolder(dir, time.Now()), quiet); err == nil || !strings.Contains(err.Error(), "before the log's first segment (index 11)") {
		t.Fatalf("cut at 5 with the log starting at 11 after Open: %v, want refused", err)
	}
	if _, err := os.Stat(start); err != nil {
		t.Fatalf("the refused cut changed the folder: %v", err)
	}
	if err := CutAt(dir, 15, CutFolder(dir, time.Now()), quiet); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, 0)
	defer l.Close()
	if first, _ := l.FirstIndex(); first != 11 || l.LastIndex() != 14 {
		t.Fatalf("after the cut at 15: %d..%d, want 11..14", first, l.LastIndex())
	}
}
