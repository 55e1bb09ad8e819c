package wal

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if n, err := l.Size(); err != nil || n != entriesEndOf(t, seg) {
		t.Fatalf("Size = %d, %v; want the entries' %d bytes, not the padding", n, err, entriesEndOf(t, seg))
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
	_, segs := writtenLog(t, 500, 200)
	if len(segs) < 3 {
		t.Fatalf("%d segments: want several", len(segs))
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

// TestTornEntryInPadding: an entry inside the padding whose first sector
// alone was written (a crash during its write) is a torn tail: cut, and
// kept in a .broken copy without the zeros after it. A zero byte followed
// by other bytes in the same sector is no torn write (a written sector
// holds the entry's length, never zero): refused, nothing cut.
func TestTornEntryInPadding(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	appendRecs(t, l, 0, 3)
	if _, err := l.Append([][]byte{bytes.Repeat([]byte{'t'}, 2000)}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	seg := segmentFile{path: filepath.Join(dir, segmentName(1)), first: 1}
	data, _ := os.ReadFile(seg.path)
	var good int64
	scanSegment(seg.path, data, 1, func(e entry) error { good = e.offset; return nil })
	firstSector := (good/sectorSize + 1) * sectorSize
	for name, torn := range map[string][]byte{
		"entry's first sector": bytes.Clone(data[good:firstSector]),
		"zero then garbage":    {0, 0, 0, 7, 1},
	} {
		t.Run(name, func(t *testing.T) {
			img := make([]byte, len(data))
			copy(img, data[:good])
			copy(img[good:], torn)
			dir := t.TempDir()
			path := filepath.Join(dir, segmentName(1))
			if err := os.WriteFile(path, img, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, Options{Logger: quiet})
			if name == "zero then garbage" {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Offset != good {
					t.Fatalf("open: %v, want corruption at offset %d", err, good)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, img) {
					t.Fatal("a refused open changed the segment")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if want := int64(len(bytes.TrimRight(torn, "\x00"))); l.CutBytes() != want {
				t.Fatalf("cut %d bytes, want %d (the torn bytes, not the padding after them)", l.CutBytes(), want)
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
	dir, segs := writtenLog(t, 300, 60)
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
	dir, _ := writtenLog(t, 0, 5)
	if err := CutAt(dir, 7, CutFolder(dir, time.Now()), quiet); err == nil || !strings.Contains(err.Error(), "past the end of the log (last index 5)") {
		t.Fatalf("cut at 7 of a 5-entry log: %v, want past the end", err)
	}
	if err := CutAt(dir, 4, CutFolder(dir, time.Now()), quiet); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir); len(got) != 3 {
		t.Fatalf("after the cut at 4: %d records, want 3", len(got))
	}
}

// TestSmallerSegmentSizeLeavesNoPaddingInFullSegment: a folder padded with
// the default segment size, reopened with a smaller one, rolls its old
// tail once its entries pass the new size: the roll truncates the padding
// left after them, so no segment but the tail has any.
func TestSmallerSegmentSizeLeavesNoPaddingInFullSegment(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0) // DefaultSegmentSize: tail padded to padChunk
	appendRecs(t, l, 0, 10)
	l.Close()
	l = openT(t, dir, 4096) // same folder, smaller segments
	appendRecs(t, l, 10, 400)
	l.Close()
	segs, _ := listSegments(dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		fi, _ := os.Stat(s.path)
		if end := entriesEndOf(t, s); end != fi.Size() {
			t.Errorf("%s is not the tail but has %d bytes of padding after its entries (%d bytes, entries up to %d)",
				filepath.Base(s.path), fi.Size()-end, fi.Size(), end)
		}
	}
}

// TestFrameAcrossPadStepLosesExtension: a frame that straddles the end of
// the padding while the segment is below its size (pad extends by one
// step) and a power cut that loses the extension (the file keeps its
// durable size): the frame overruns the file and is cut, the acknowledged
// ones stay.
func TestFrameAcrossPadStepLosesExtension(t *testing.T) {
	src := t.TempDir()
	l := openT(t, src, 4<<20)
	big := bytes.Repeat([]byte{'z'}, 100<<10)
	for i := 0; i < 2; i++ { // 200 KiB of entries in a 256 KiB padding
		if _, err := l.Append([][]byte{big}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(src, segmentName(1))
	before, _ := os.Stat(path)
	if _, err := l.Append([][]byte{big}); err != nil { // crosses 256 KiB
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	l.Close()
	if before.Size() != padChunk || after.Size() != 2*padChunk {
		t.Fatalf("sizes %d then %d, want one pad step", before.Size(), after.Size())
	}
	data, _ := os.ReadFile(path)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, segmentName(1)), data[:padChunk], 0o644) // extension lost
	l, err := Open(dir, Options{Logger: quiet, SegmentSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if got := readAll(t, dir); len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
}

// TestSizeSkipsSegmentTruncatedMeanwhile: a segment that a front
// truncation removes between Size's listing and its stat counts as gone,
// not as an error (a metrics scrape during a compaction).
func TestSizeSkipsSegmentTruncatedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 300)
	defer l.Close()
	appendRecs(t, l, 0, 60)
	segs, _ := listSegments(dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	full, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	gone := segs[0].path
	fi, _ := os.Stat(gone)
	statFile = func(path string) (os.FileInfo, error) {
		if path == gone {
			return nil, &os.PathError{Op: "stat", Path: path, Err: fs.ErrNotExist}
		}
		return os.Stat(path)
	}
	defer func() { statFile = os.Stat }()
	if n, err := l.Size(); err != nil || n != full-fi.Size() {
		t.Fatalf("Size with a segment gone meanwhile = %d, %v; want %d, nil", n, err, full-fi.Size())
	}
}

// TestPadFailureGrowsTheFile: when the padding cannot be written (a disk
// with less than a step free), the entry is written all the same, growing
// the file, and the segment is not padded again: a nearly full disk fails
// an append only when the entry itself does not fit.
func TestPadFailureGrowsTheFile(t *testing.T) {
	var pads int
	dir := t.TempDir()
	l := openT(t, dir, 0)
	ioHook = func(c ioCall) error {
		if c.kind != ioWrite || !allZero(c.data) {
			return nil // an entry's write
		}
		if pads++; pads > 1 {
			return nil // a second try: let it be, and counted
		}
		return syscall.ENOSPC // the disk is full
	}
	defer func() { ioHook = nil }()
	appendRecs(t, l, 0, 3)
	appendRecs(t, l, 3, 4000) // well past a step
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if pads != 1 {
		t.Fatalf("padding tried %d times, want once for the segment", pads)
	}
	if got := readAll(t, dir); len(got) != 4000 || !bytes.Equal(got[3999], rec(3999)) {
		t.Fatalf("%d records read back, want the 4,000 appended", len(got))
	}
	seg := segmentFile{path: filepath.Join(dir, segmentName(1)), first: 1}
	if fi, _ := os.Stat(seg.path); fi.Size() != entriesEndOf(t, seg) {
		t.Fatalf("segment of %d bytes, entries up to %d: want it grown by its entries, no padding after them", fi.Size(), entriesEndOf(t, seg))
	}
}
