package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// earlyEntryLog writes a log whose last entry is at index last (1 or 2: the
// only indexes whose first byte is a version byte, 1 or 2) and holds last
// records of payload bytes (so that its count, read as an index when a
// grown length prefix shifts the frame by one byte, is last too), closes it
// and returns the segment's bytes, the entry's offset and end, and every
// record. The file ends with the entry (Close cuts the padding).
func earlyEntryLog(t *testing.T, last uint64, payload int) (data []byte, off, end int, recs [][]byte) {
	t.Helper()
	dir := t.TempDir()
	l := openT(t, dir, 0)
	for i := uint64(1); i <= last; i++ {
		var batch [][]byte
		for r := 0; r < 1 || i == last && r < int(last); r++ {
			batch = append(batch, bytes.Repeat([]byte{byte('p' + r)}, payload))
		}
		if _, err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, batch...)
	}
	l.Close()
	data, _ = os.ReadFile(filepath.Join(dir, segmentName(1)))
	scanSegment("", data, 1, func(e entry) error { off, end = int(e.offset), int(e.offset+e.size); return nil })
	return data, off, end, recs
}

// TestTailFlipEarlyEntryHeader: the length prefix (by every mask) and the
// header (see flips) of the log's first or second entry, whole and
// acknowledged, changed.
// A grown length prefix takes the version byte in, and the frame's bytes,
// read one byte later, start with its index: 1 or 2, a version byte. Found
// by the power-loss harness (seed 83004592190): byte 1 of the first
// entry's two-byte prefix made it claim 29,208 bytes, its shifted bytes
// read as a version 1 frame for index 1 with records that fit, the rest
// past the file's end: cut as a torn write, an acknowledged entry lost.
// Now a version 1 frame is only taken for one after version 1 frames, and
// a version 2 frame's header checksum binds its length: every change is
// refused (or the entry kept). The entry is followed by the file's end, or
// by two sectors of the tail's padding.
func TestTailFlipEarlyEntryHeader(t *testing.T) {
	noDirSync(t)
	for _, last := range []uint64{1, 2} {
		for _, payload := range []int{20, 1100, 1101, 20001} {
			data, off, end, recs := earlyEntryLog(t, last, payload)
			if payload%3 == 0 {
				data = append(data, make([]byte, 2*sectorSize)...)
			}
			_, k := binary.Uvarint(data[off:])
			dir := t.TempDir()
			for i := off; i < off+k+1+1+1+headerSumSize; i++ {
				for _, mask := range flips(data[off:end], i-off) {
					name := fmt.Sprintf("entry %d of %d bytes: byte %d ^ %#x", last, end-off, i-off, mask)
					img := bytes.Clone(data)
					img[i] ^= mask
					checkFlipped(t, name, dir, img, off, last, recs)
				}
			}
		}
	}
}

// TestTailHeaderChecksumRefusesAShiftedFrame: an entry at index 2 whose
// grown length prefix shifts its frame by one byte so that every written
// byte agrees with a torn write of the longer frame it now claims (version
// 2, index 2, a record count and record lengths that run past the file's
// end), but for the header checksum, which covers the length: boot
// refuses it, naming the header checksum. Without the header checksum,
// boot cut it: an acknowledged entry lost.
func TestTailHeaderChecksumRefusesAShiftedFrame(t *testing.T) {
	noDirSync(t)
	first := appendEntry(nil, 1, [][]byte{[]byte("first")})
	for salt := 0; salt < 10000; salt++ {
		recs := [][]byte{[]byte(fmt.Sprintf("salt %d", salt)), bytes.Repeat([]byte{0x7f}, 1000)}
		entry := appendEntry(nil, 2, recs)
		_, k := binary.Uvarint(entry)
		if k != 2 || entry[k+1] != 2 || entry[k+2] != byte(len(recs)) {
			t.Fatalf("entry 2 starts % x: want a two-byte prefix, index 2, count 2", entry[:k+3])
		}
		img := append(bytes.Clone(first), entry...)
		off := len(first)
		img[off+1] |= 0x80 // the prefix takes the version byte in
		if !shiftedAgrees(img, off) {
			continue // the shifted bytes fail a check of their own
		}
		v := judgeTail(img, off, 2, Version)
		if v.torn || !strings.Contains(v.reason, "header checksum") {
			t.Fatalf("salt %d: torn=%v reason %q, want refused for its header checksum", salt, v.torn, v.reason)
		}
		dir := t.TempDir()
		if _, err := openImage(t, dir, img); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "header checksum") {
			t.Fatalf("salt %d: open: %v, want corruption for its header checksum", salt, err)
		}
		return
	}
	t.Fatal("no salt shifts entry 2 into a frame that agrees but for its header checksum")
}

// shiftedAgrees tells whether the entry at off of img, read from its
// (changed) length prefix, agrees with a torn write of the frame it claims
// in everything but its header checksum: the check TestTailHeaderChecksum…
// needs its image to pass, so that only the header checksum refuses it.
func shiftedAgrees(img []byte, off int) bool {
	n, k := binary.Uvarint(img[off:])
	start, end := off+k, off+k+int(n)
	v := entryView{data: img, off: off, end: end}
	if end <= len(img) || img[start] != Version {
		return false
	}
	index, m := binary.Uvarint(img[start+1:])
	count, c := binary.Uvarint(img[start+1+m:])
	pos := start + 1 + m + c
	return index == 2 && count > 0 && count <= maxRecords && v.allKnown(pos, pos+headerSumSize) &&
		v.recordLengths(pos+headerSumSize, end, count, true) == ""
}

// appendFrameV1 encodes a version 1 frame, as orkwal wrote them before the
// header checksum: version 1, index, count, records, XXH64.
func appendFrameV1(dst []byte, index uint64, records [][]byte) []byte {
	var f []byte
	f = append(f, Version1)
	f = binary.AppendUvarint(f, index)
	f = binary.AppendUvarint(f, uint64(len(records)))
	for _, r := range records {
		f = binary.AppendUvarint(f, uint64(len(r)))
		f = append(f, r...)
	}
	f = binary.LittleEndian.AppendUint64(f, xxhash.Sum64(f))
	dst = binary.AppendUvarint(dst, uint64(len(f)))
	return append(dst, f...)
}

// v1Log is a segment of n version 1 entries, one record each (rec(i)).
func v1Log(n int) []byte {
	var seg []byte
	for i := 0; i < n; i++ {
		seg = appendFrameV1(seg, uint64(i+1), [][]byte{rec(i)})
	}
	return seg
}

// TestVersion1LogStillReads: a folder written before the header checksum
// (version 1 frames) boots and replays, and appends go on after it in
// version 2; the mixed log replays whole after a reopen.
func TestVersion1LogStillReads(t *testing.T) {
	dir := t.TempDir()
	l, err := openImage(t, dir, v1Log(5))
	if err != nil {
		t.Fatalf("open a version 1 log: %v", err)
	}
	appendRecs(t, l, 5, 8)
	l.Close()
	var want [][]byte
	for i := 0; i < 8; i++ {
		want = append(want, rec(i))
	}
	if got := readAll(t, dir); !equalRecords(got, want) {
		t.Fatalf("mixed log replays %d records, want %d", len(got), len(want))
	}
	data, _ := os.ReadFile(filepath.Join(dir, segmentName(1)))
	versions := ""
	scanSegment("", data, 1, func(e entry) error {
		_, k := binary.Uvarint(data[e.offset:])
		versions += fmt.Sprint(data[int(e.offset)+k])
		return nil
	})
	if versions != "11111222" {
		t.Fatalf("frame versions %s, want 11111222 (version 1 read, version 2 written)", versions)
	}
}

// TestVersion1TornTail: a torn write left by an orkwal that wrote version 1
// frames is still cut after version 1 frames, by the rules of before; a
// version 1 frame after a version 2 frame, or first in the log, is never
// taken for one (only a damaged length prefix puts it there): refused.
func TestVersion1TornTail(t *testing.T) {
	noDirSync(t)
	whole := v1Log(4)
	torn := appendFrameV1(nil, 4, [][]byte{bytes.Repeat([]byte{'t'}, 900)})
	v1 := append(v1Log(3), torn[:len(torn)/2]...) // entry 4 cut short: the file's end
	l, err := openImage(t, t.TempDir(), v1)
	if err != nil {
		t.Fatalf("a torn version 1 tail after version 1 frames: %v, want it cut", err)
	}
	l.Close()

	mixed := append(appendEntry(nil, 1, [][]byte{rec(0)}), appendFrameV1(nil, 2, [][]byte{bytes.Repeat([]byte{'t'}, 900)})...)
	mixed = mixed[:len(mixed)-400]
	if _, err := openImage(t, t.TempDir(), mixed); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 1 frame cut short after a version 2 frame: %v, want corruption", err)
	}
	first := appendFrameV1(nil, 1, [][]byte{bytes.Repeat([]byte{'t'}, 900)})
	if _, err := openImage(t, t.TempDir(), first[:400]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a version 1 frame cut short, first in the log: %v, want corruption", err)
	}
	if _, err := openImage(t, t.TempDir(), whole); err != nil {
		t.Fatalf("a whole version 1 log: %v", err)
	}
}
