package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailIsPadded: appends write inside the tail's zero padding (the file
// is padded ahead of the entries, and a commit does not grow it), a
// reopened log reads every entry, cuts nothing, and appends after its
// entries, not after the padding.
func TestTailIsPadded(t *testing.T) {
	dir := t.TempDir()
	seg := segmentFile{path: filepath.Join(dir, segmentName(1)), first: 1}
	l := openT(t, dir, 0)
	appendRecs(t, l, 0, 10)
	fi, err := os.Stat(seg.path)
	if err != nil {
		t.Fatal(err)
	}
	end := entriesEndOf(t, seg)
	if fi.Size() != padChunk || end >= fi.Size() {
		t.Fatalf("tail of %d bytes with entries up to %d: want it padded to %d", fi.Size(), end, padChunk)
	}
	appendRecs(t, l, 10, 11)
	if after, _ := os.Stat(seg.path); after.Size() != fi.Size() {
		t.Fatalf("an append inside the padding changed the file's size: %d, then %d", fi.Size(), after.Size())
	}
	l.Close()
	data, _ := os.ReadFile(seg.path)
	if end := entriesEndOf(t, seg); !allZero(data[end:]) {
		t.Fatal("the padding after the entries is not zeros")
	}

	l = openT(t, dir, 0)
	if l.CutBytes() != 0 {
		t.Fatalf("open cut %d bytes of padding", l.CutBytes())
	}
	if broken, _ := filepath.Glob(seg.path + ".broken-*"); len(broken) != 0 {
		t.Fatalf("open kept a torn-tail copy of the padding: %v", broken)
	}
	appendRecs(t, l, 11, 12)
	l.Close()
	got := readAll(t, dir)
	if len(got) != 12 || !bytes.Equal(got[11], rec(11)) {
		t.Fatalf("after reopen and append: %d records, want 12 ending with %q", len(got), rec(11))
	}
}

// TestFullSegmentsHaveNoPadding: the padding stops at the segment size and
// the entry that reaches it goes past it, so every segment but the tail
// ends with its last entry.
func TestFullSegmentsHaveNoPadding(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 500)
	appendRecs(t, l, 0, 200)
	l.Close()
	segs, err := listSegments(dir)
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments, %v: want several", len(segs), err)
	}
	for _, s := range segs[:len(segs)-1] {
		fi, _ := os.Stat(s.path)
		if end := entriesEndOf(t, s); end != fi.Size() || end < 500 {
			t.Errorf("%s: %d bytes, entries up to %d: want its entries to reach the segment size and end it", s.path, fi.Size(), end)
		}
	}
	if fi, _ := os.Stat(segs[len(segs)-1].path); fi.Size() > 500 {
		t.Errorf("tail padded to %d bytes, past the segment size 500", fi.Size())
	}
}

// TestTornEntryInPadding: a partly written entry inside the padding (a
// crash during its write) is a torn tail: cut, and kept in a .broken copy
// without the zeros after it. A zero byte followed by anything but zeros
// is not padding.
func TestTornEntryInPadding(t *testing.T) {
	for name, torn := range map[string][]byte{
		"entry's first bytes": nil, // filled below
		"zero then garbage":   {0, 0, 0, 7, 1},
	} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			l := openT(t, src, 0)
			appendRecs(t, l, 0, 4)
			l.Close()
			seg := segmentFile{path: filepath.Join(src, segmentName(1)), first: 1}
			data, _ := os.ReadFile(seg.path)
			good := entriesEndOf(t, seg)
			if torn == nil { // the first 5 bytes of entry 4, written over entry 4
				scanSegment(seg.path, data, 1, func(e entry) error { good = e.offset; return nil })
				torn = bytes.Clone(data[good : good+5])
			}
			img := make([]byte, len(data))
			copy(img, data[:good])
			copy(img[good:], torn)
			dir := t.TempDir()
			path := filepath.Join(dir, segmentName(1))
			if err := os.WriteFile(path, img, 0o644); err != nil {
				t.Fatal(err)
			}
			l = openT(t, dir, 0)
			defer l.Close()
			if want := int64(len(img)) - good; l.CutBytes() != want {
				t.Fatalf("cut %d bytes, want %d (from the torn entry on)", l.CutBytes(), want)
			}
			broken, _ := filepath.Glob(path + ".broken-*")
			if len(broken) != 1 {
				t.Fatalf("%d .broken copies, want 1", len(broken))
			}
			kept, _ := os.ReadFile(broken[0])
			if !bytes.Equal(kept, bytes.TrimRight(torn, "\x00")) {
				t.Fatalf(".broken copy holds %x, want the torn bytes %x", kept, torn)
			}
			if fi, _ := os.Stat(path); fi.Size() != good {
				t.Fatalf("segment of %d bytes after the cut, want %d", fi.Size(), good)
			}
		})
	}
}

// TestZeroThenGarbageInFullSegmentIsCorruption: in a segment that is not
// the tail, zeros followed by other bytes are corruption, never an end.
func TestZeroThenGarbageInFullSegmentIsCorruption(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 300)
	appendRecs(t, l, 0, 60)
	l.Close()
	segs, _ := listSegments(dir)
	first := segs[0]
	data, _ := os.ReadFile(first.path)
	end := entriesEndOf(t, first)
	// Replace the last entry by zeros and one stray byte.
	var last int64
	scanSegment(first.path, data, first.first, func(e entry) error { last = e.offset; return nil })
	for i := last; i < end; i++ {
		data[i] = 0
	}
	data[end-1] = 9
	os.WriteFile(first.path, data, 0o644)
	err := ReplayDir(dir, 1, func(uint64, [][]byte) error { return nil })
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != first.path || ce.Offset != last || !strings.Contains(ce.Reason, "zero length") {
		t.Fatalf("replay: %v; want corruption at offset %d of %s", err, last, first.path)
	}
}

// TestCutAtPaddedTail: an operator's cut finds entries by their lengths
// and stops at the padding: cutting after the last entry removes only the
// padding, and an index beyond is refused.
func TestCutAtPaddedTail(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	appendRecs(t, l, 0, 5)
	l.Close()
	if _, err := CutAt(dir, 7, quiet); err == nil || !strings.Contains(err.Error(), "past the end of the log (last index 5)") {
		t.Fatalf("cut at 7 of a 5-entry log: %v, want past the end", err)
	}
	if _, err := CutAt(dir, 4, quiet); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); len(got) != 3 {
		t.Fatalf("after the cut at 4: %d records, want 3", len(got))
	}
}
