package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// lastEntryLog writes a log whose last entry (payload bytes of 'p') starts at
// an offset ≡ at (mod sectorSize), closes it, and returns the segment's
// bytes (its padding trimmed to two sectors past the entry, so that images
// are cheap to write), the entry's offset and end, and every record.
func lastEntryLog(t *testing.T, at, payload int) (data []byte, off, end int, recs [][]byte) {
	t.Helper()
	dir := t.TempDir()
	l := openT(t, dir, 0)
	appendRecs(t, l, 0, 3)
	for i := 0; i < 3; i++ {
		recs = append(recs, rec(i))
	}
	// A filler entry so that the last one starts where the test wants.
	size, _ := l.Size()
	gap := (at - int(size)%sectorSize + 2*sectorSize) % sectorSize
	for gap < 16 {
		gap += sectorSize
	}
	filler := bytes.Repeat([]byte{'f'}, gap-6) // entry = 1 + (1 + 1 + 1 + 1 + n + 8) bytes
	for EntrySize(4, [][]byte{filler}) > int64(gap) {
		filler = filler[:len(filler)-1]
	}
	for EntrySize(4, [][]byte{filler}) < int64(gap) {
		filler = append(filler, 'f')
	}
	last := bytes.Repeat([]byte{'p'}, payload)
	for _, r := range [][]byte{filler, last} {
		if _, err := l.Append([][]byte{r}); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	l.Close()
	seg := segmentFile{path: filepath.Join(dir, segmentName(1)), first: 1}
	data, _ = os.ReadFile(seg.path)
	scanSegment(seg.path, data, 1, func(e entry) error { off, end = int(e.offset), int(e.offset+e.size); return nil })
	if off%sectorSize != at {
		t.Fatalf("last entry at offset %d, want ≡ %d (mod %d)", off, at, sectorSize)
	}
	return data[:min(len(data), (end/sectorSize+2)*sectorSize)], off, end, recs
}

// openImage writes img as the only segment of dir and opens the log.
func openImage(t *testing.T, dir string, img []byte) (*Log, error) {
	t.Helper()
	// Overwritten in place, not truncated to zero first: ext4 flushes a
	// file rewritten that way when it is closed (auto_da_alloc).
	f, err := os.OpenFile(filepath.Join(dir, segmentName(1)), os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		_, err = f.WriteAt(img, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(img)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return Open(dir, Options{Logger: quiet})
}

// noDirSync makes folder fsyncs free for a test that opens thousands of
// images (what it checks is the decision, not durability).
func noDirSync(t *testing.T) {
	ioHook = func(c ioCall) error {
		if c.kind == ioDirSync {
			return errSkipIO
		}
		return nil
	}
	t.Cleanup(func() { ioHook = nil })
}

// entryStarts are the offsets (mod 512) the last entry is put at: the
// start of a sector, its middle, and the last three bytes of one (where the
// entry's first sector holds nothing but its length prefix).
var entryStarts = []int{0, 200, 509, 510, 511}

// TestTailFlipEveryByte: a whole, acknowledged last entry with one byte
// changed (every byte of it, flipped whole; many by their lowest and
// highest bit too, and the length prefix's bytes by every mask: see flips)
// is corruption, not a torn tail: boot refuses, naming the
// segment, the entry's offset and index, and changes nothing; or it keeps
// every record (a length prefix alone in its sector, zeroed, is restored
// from the whole frame after it). Before, boot cut it as a torn tail: the
// entry, acknowledged, was lost.
func TestTailFlipEveryByte(t *testing.T) {
	noDirSync(t)
	for _, payload := range []int{20, 1100} {
		for _, at := range entryStarts {
			data, off, end, recs := lastEntryLog(t, at, payload)
			dir := t.TempDir()
			for i := off; i < end; i++ {
				for _, mask := range flips(data[off:end], i-off) {
					name := fmt.Sprintf("payload %d at %d: byte %d of %d ^ %#x", payload, off, i-off, end-off, mask)
					img := bytes.Clone(data)
					img[i] ^= mask
					checkFlipped(t, name, dir, img, off, 5, recs)
				}
			}
		}
	}
}

// checkFlipped opens the changed image img in dir, whose last entry (at
// off, index) was whole: boot must refuse, naming the segment, the entry's
// offset and index, change nothing, and verify must refuse too; or boot
// keeps every record, recs.
func checkFlipped(t *testing.T, name, dir string, img []byte, off int, index uint64, recs [][]byte) {
	t.Helper()
	seg := filepath.Join(dir, segmentName(1))
	l, err := openImage(t, dir, img)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		if ce.Segment != seg || ce.Offset != int64(off) || ce.Index != index {
			t.Fatalf("%s: refused at %s offset %d index %d, want %s offset %d index %d", name, ce.Segment, ce.Offset, ce.Index, seg, off, index)
		}
		if after, _ := os.ReadFile(seg); !bytes.Equal(after, img) {
			t.Fatalf("%s: a refused boot changed the segment", name)
		}
		if torn, verr := VerifyDir(dir, func(uint64, [][]byte) error { return nil }); verr == nil {
			t.Fatalf("%s: boot refuses, verify says torn=%v", name, torn)
		}
	case err != nil:
		t.Fatalf("%s: open: %v", name, err)
	default:
		l.Close()
		if got := readAll(t, dir); !equalRecords(got, recs) {
			t.Fatalf("%s: booted with %d records, want all %d", name, len(got), len(recs))
		}
	}
}

// TestTailTearAtEverySectorBoundary: what a power cut can leave of the last
// entry's write, at every sector boundary inside it: the sectors before the
// boundary and not after (the file's end there, or the padding's zeros),
// the sectors after and not before, one sector alone missing. Each is a
// torn write: boot cuts it (or keeps the entry when only its length
// prefix's sector was lost) and accepts appends; nothing before it is lost.
func TestTailTearAtEverySectorBoundary(t *testing.T) {
	noDirSync(t)
	for _, payload := range []int{20, 1100, 3000} {
		for _, at := range entryStarts {
			data, off, end, recs := lastEntryLog(t, at, payload)
			first := (off/sectorSize + 1) * sectorSize
			for b := first; b < end; b += sectorSize {
				lost := min(b+sectorSize, end)
				images := map[string][]byte{
					"kept before, file ends": bytes.Clone(data[:b]),
					"kept before":            clearRange(data, b, end),
					"kept after":             clearRange(data, off, b),
					"one sector lost":        clearRange(data, b, lost),
				}
				if b-sectorSize >= off {
					images["the sector before lost"] = clearRange(data, b-sectorSize, b)
				}
				for kind, img := range images {
					name := fmt.Sprintf("payload %d at %d, boundary +%d: %s", payload, off, b-off, kind)
					dir := t.TempDir()
					l, err := openImage(t, dir, img)
					if err != nil {
						t.Fatalf("%s: refused: %v", name, err)
					}
					if _, err := l.Append([][]byte{[]byte("after")}); err != nil {
						t.Fatalf("%s: append after the cut: %v", name, err)
					}
					l.Close()
					got := readAll(t, dir)
					kept := len(got) - 1
					if kept != len(recs)-1 && kept != len(recs) || !equalRecords(got[:kept], recs[:kept]) {
						t.Fatalf("%s: %d records before the new one, want the %d before the torn entry (or all %d)", name, kept, len(recs)-1, len(recs))
					}
				}
			}
		}
	}
}

// flips are the changes tried on byte i of an entry: every byte flipped
// whole; its lowest and highest bit alone too near the entry's ends
// (length prefix, header, checksum) and at every 7th byte in between; and
// every mask on the length prefix's bytes (the first byte's zeroes it),
// whose changes make the entry claim another length.
func flips(entry []byte, i int) []byte {
	if _, k := binary.Uvarint(entry); i < k {
		masks := make([]byte, 255)
		for m := range masks {
			masks[m] = byte(m + 1)
		}
		return masks
	}
	if n := len(entry); i < 16 || i >= n-16 || i%7 == 0 {
		return []byte{0xff, 0x01, 0x80}
	}
	return []byte{0xff}
}

func clearRange(b []byte, lo, hi int) []byte {
	out := bytes.Clone(b)
	clear(out[lo:hi])
	return out
}

// entryEndingAt writes a log whose last entry ends k bytes into a sector
// (its payload sized to), returning what lastEntryLog does.
func entryEndingAt(t *testing.T, k int) (data []byte, off, end int, recs [][]byte) {
	t.Helper()
	for p := 400; p < 1000; p++ {
		if int(EntrySize(5, [][]byte{make([]byte, p)}))%sectorSize == k {
			return lastEntryLog(t, 0, p)
		}
	}
	t.Fatalf("no payload makes an entry end %d bytes into a sector", k)
	return
}

// TestTailLastChecksumBytesRestored: a whole last entry whose only bytes in
// its last sector (the end of its checksum, up to 4 bytes) read as zeros
// (a change zeroed them, or a torn write lost that sector, or the file
// ends before them) is kept: every other byte was written and the written
// checksum bytes agree with the records, so the rest are known. Boot
// restores them (the segment then holds the frame whole) and keeps every
// record, and verify reads the entry. Before, boot cut it as a torn write,
// losing an entry that may have been acknowledged. With one byte of the
// records changed as well, it is corruption: refused.
func TestTailLastChecksumBytesRestored(t *testing.T) {
	noDirSync(t)
	for k := 1; k <= minChecksumKnown; k++ {
		data, off, end, recs := entryEndingAt(t, k)
		images := map[string][]byte{
			"zeroed":    clearRange(data, end-k, end),
			"file ends": bytes.Clone(data[:end-k]),
		}
		for kind, img := range images {
			name := fmt.Sprintf("entry ending %d bytes into a sector, %s", k, kind)
			dir := t.TempDir()
			var seen [][]byte
			l, err := openImage(t, dir, img)
			if err != nil {
				t.Fatalf("%s: refused: %v", name, err)
			}
			l.Close()
			if got := readAll(t, dir); !equalRecords(got, recs) {
				t.Fatalf("%s: booted with %d records, want all %d", name, len(got), len(recs))
			}
			after, _ := os.ReadFile(filepath.Join(dir, segmentName(1)))
			if !bytes.Equal(after[off:end], data[off:end]) {
				t.Fatalf("%s: the entry's bytes were not restored", name)
			}
			if _, err := VerifyDir(dir, func(_ uint64, rs [][]byte) error { seen = append(seen, rs...); return nil }); err != nil || !equalRecords(seen, recs) {
				t.Fatalf("%s: verify after the boot: %v, %d records", name, err, len(seen))
			}
		}
		// The records damaged too: the written checksum bytes disagree.
		img := clearRange(data, end-k, end)
		img[end-checksumSize-1] ^= 0x01
		checkFlipped(t, fmt.Sprintf("entry ending %d bytes into a sector, zeroed, a record byte changed", k), t.TempDir(), img, off, 5, recs)
	}
}
