package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/cespare/xxhash/v2"
)

// A torn write against a corrupted record (docs/format.md, "Recovery").
//
// The last entry of the last segment may be bad for two reasons:
//   - a torn write: the power went while the entry was being written, before
//     its fsync (so it was never acknowledged). The disk kept some of its
//     sectors and not others, in any order (the page cache writes pages back
//     when it likes; a disk writes a sector whole or not at all). A sector it
//     did not keep holds what it held before the write: zeros, since every
//     entry is written over the tail's zero padding or past the end of the
//     file (which then ends early);
//   - corruption: the entry was written whole and fsynced (acknowledged), and
//     bytes changed later (a flipped bit, a bad block, a hand). Every one of
//     its sectors then holds bytes of the entry.
//
// judgeTail cuts only what a torn write can explain: some sector of the
// entry reads as zeros (or lies past the end of the file), and the bytes of
// the sectors that were written agree with one another (the length prefix
// with the frame's own structure, the checksum with the bytes it covers when
// they are all known). Anything else is corruption. This is etcd's zeroed
// sector test (its decoder calls a bad record torn when one of its sectors
// is all zero), made stricter with what a frame says of itself, because a
// flipped length prefix would otherwise stretch a whole frame over the
// padding's zero sectors. A length prefix that a change grows by a byte
// shifts the frame it claims by one: version 2's header checksum (which
// covers the length) fails on the shifted bytes, and a version 1 frame is
// only taken for one after version 1 frames (docs/format.md, "Torn write
// or corruption", says why these close every one-byte change).

// sectorSize is the unit a power cut keeps or loses of a write: the smallest
// sector of a disk (512 bytes; a 4 KiB sector or page is whole 512-byte
// ones). Sectors are counted from the start of the segment file.
const sectorSize = 512

// minFrame is the size of the smallest frame of either version (version
// 1's: version, index, count, one record length (an empty record),
// checksum; version 2 adds its header checksum).
const minFrame = 1 + 1 + 1 + 1 + checksumSize

// tailVerdict is what recovery does with a bad last entry.
type tailVerdict struct {
	torn   bool       // a torn write: cut it
	keep   *keptEntry // the entry is whole but some of its bytes read as zeros: restore them and keep it
	reason string     // otherwise: why it is corruption
}

// keptEntry is a bad last entry whose every byte is known although some
// read as zeros: the bytes to write back at an offset of the segment, and
// the frame they make whole.
type keptEntry struct {
	at    int    // where patch goes
	patch []byte // the bytes that read as zeros, restored
	frame []byte // the whole frame, its bytes restored
	end   int    // the entry's end in the segment
	what  string // which bytes were restored, for the log
}

// entryView is the bytes of a segment seen from a bad entry at off: which
// of them a torn write may have left unwritten.
type entryView struct {
	data []byte
	off  int
	end  int // the end of the span judged: the entry's end if known, else len(data)
}

// known tells whether byte i was written: it is in the file, and the part of
// its sector inside [off, end) is not all zero (a written sector of the
// entry may hold zero bytes, but not only zeros: see judgeTail's limits).
func (v entryView) known(i int) bool {
	if i < v.off || i >= len(v.data) || i >= v.end {
		return false
	}
	lo := max(i/sectorSize*sectorSize, v.off)
	hi := min(lo/sectorSize*sectorSize+sectorSize, v.end, len(v.data))
	return !allZero(v.data[lo:hi])
}

// allKnown tells whether every byte of [lo, hi) was written. Bytes past
// the file or the entry's end never were: checking one byte per sector
// would otherwise pass a range that runs off the file's end.
func (v entryView) allKnown(lo, hi int) bool {
	if hi > len(v.data) || hi > v.end {
		return false
	}
	for i := lo; i < hi; i = (i/sectorSize + 1) * sectorSize {
		if !v.known(i) {
			return false
		}
	}
	return true
}

// uvarint reads a uvarint at i from written bytes only: ok is false when a
// byte it needs was not written (or the varint is malformed: bad).
func (v entryView) uvarint(i int) (x uint64, n int, ok, bad bool) {
	for n = 0; n < binary.MaxVarintLen64; n++ {
		if !v.known(i + n) {
			return 0, 0, false, false
		}
		if v.data[i+n] < 0x80 {
			x, k := binary.Uvarint(v.data[i : i+n+1])
			return x, k, k > 0, k <= 0
		}
	}
	return 0, 0, false, true
}

// judgeTail decides what the bad entry at off of a last segment (data, the
// whole file), expected to hold index, is: a torn write, a whole frame whose
// length prefix alone was lost, or corruption. prev is the version of the
// frame before it in the log (versionBefore; 0: none).
func judgeTail(data []byte, off int, index uint64, prev byte) tailVerdict {
	if laterFrameExists(data[off:], index) {
		return tailVerdict{reason: "followed by valid frames"}
	}
	v := entryView{data: data, off: off, end: len(data)}
	n, k, ok, bad := v.uvarint(off)
	switch {
	case bad:
		return tailVerdict{reason: "its length prefix, in a written sector, is not a number"}
	case !ok: // a byte of it is in a sector that reads as zeros
		return judgeLostPrefix(v, index)
	case n < minFrame:
		return tailVerdict{reason: fmt.Sprintf("length %d, in a written sector, is shorter than any frame", n)}
	}
	return judgeFrame(v, off+k, int(min(n, maxEntry)), index, prev)
}

// maxEntry bounds the length judgeFrame takes from a prefix (only to keep
// its arithmetic in range: a longer one overruns any file).
const maxEntry = 1 << 48

// judgeFrame judges an entry whose length prefix was written: the frame at
// start of n bytes.
func judgeFrame(v entryView, start, n int, index uint64, prev byte) tailVerdict {
	end := start + n
	if last := v.off + len(trimZeros(v.data[v.off:])); last > end {
		return tailVerdict{reason: fmt.Sprintf("bytes are written up to offset %d, past the end its length gives (%d)", last, end)}
	}
	v.end = end
	if end <= len(v.data) && v.allKnown(v.off, end) {
		got, _, err := decodeFrame(v.data[start:end])
		if err == nil {
			err = fmt.Errorf("it is a whole frame for index %d", got)
		}
		return tailVerdict{reason: fmt.Sprintf("every sector of it was written, and it does not check (%v)", err)}
	}
	if why := v.structure(start, end, index, prev); why != "" {
		return tailVerdict{reason: why}
	}
	body := end - checksumSize
	if !v.allKnown(start, body) {
		return tailVerdict{torn: true}
	}
	var sum [checksumSize]byte
	binary.LittleEndian.PutUint64(sum[:], xxhash.Sum64(v.data[start:body]))
	written := 0
	for i := range sum {
		if v.known(body + i) {
			if v.data[body+i] != sum[i] {
				return tailVerdict{reason: "its checksum's written bytes do not match its written records"}
			}
			written++
		}
	}
	if written < minChecksumKnown {
		return tailVerdict{torn: true}
	}
	// Every byte but some of the checksum's last ones was written, and
	// those written agree with the records: the frame's every byte is
	// known. A torn write that lost only the last sector, or a change that
	// zeroed the entry's only bytes in it, leaves this; keeping it is right
	// either way.
	frame := append(bytes.Clone(v.data[start:body]), sum[:]...)
	return tailVerdict{keep: &keptEntry{at: body, patch: sum[:], frame: frame, end: end,
		what: fmt.Sprintf("the last %d bytes of its checksum", checksumSize-written)}}
}

// minChecksumKnown is how many of a frame's checksum bytes must be written,
// and agree with its records, for the rest to be restored from them: 32
// bits, so that a frame damaged elsewhere, whose last bytes happened to be
// zeros, is refused all but once in 2^32.
const minChecksumKnown = 4

// structure checks what the written bytes of a frame at [start, end) say of
// it against its length and index: "" when they agree, or could, where
// bytes were not written. A version 1 frame is only written after version
// 1 frames (prev): a newer orkwal writes version 2, an older one cannot
// append to a log holding version 2 frames.
func (v entryView) structure(start, end int, index uint64, prev byte) string {
	if !v.known(start) {
		return ""
	}
	switch ver := v.data[start]; {
	case ver == Version1 && prev != Version1:
		return fmt.Sprintf("version 1 in a written sector, after a frame of version %d (0: none), where only a damaged length prefix puts one", prev)
	case ver != Version && ver != Version1:
		return fmt.Sprintf("version %d in a written sector", ver)
	}
	pos := start + 1
	got, k, ok, bad := v.uvarint(pos)
	if bad || ok && got != index {
		return fmt.Sprintf("a written sector says index %d", got)
	}
	if !ok {
		return ""
	}
	pos += k
	count, k, ok, bad := v.uvarint(pos)
	if bad || ok && (count == 0 || count > maxRecords || count > uint64(end-pos)) {
		return fmt.Sprintf("record count %d in a written sector", count)
	}
	pos += k
	if ok && v.data[start] == Version {
		if why := v.headerSum(start, pos, end); why != "" {
			return why
		}
		pos += headerSumSize
	}
	return v.recordLengths(pos, end, count, ok)
}

// headerSum checks a version 2 frame's header checksum, at at, against the
// length the prefix gives (end - start), when its bytes were written. The
// header lies in the entry's first bytes: a torn write that kept them kept
// them whole, or lost the sector where they go on (then nothing is
// checked). A changed length prefix fails here.
func (v entryView) headerSum(start, at, end int) string {
	if !v.allKnown(at, at+headerSumSize) {
		return ""
	}
	if headerSum(end-start, v.data[start:at]) != binary.LittleEndian.Uint32(v.data[at:]) {
		return fmt.Sprintf("its header checksum, in a written sector, does not match its length %d, version, index and count (a damaged header)", end-start)
	}
	return ""
}

// recordLengths checks, as far as they were written, that count records
// from pos end exactly at the checksum before end. ok: pos is known.
func (v entryView) recordLengths(pos, end int, count uint64, ok bool) string {
	body := end - checksumSize
	for i := uint64(0); ok && i < count; i++ {
		n, k, known, bad := v.uvarint(pos)
		if bad || known && (pos+k > body || n > uint64(body-pos-k)) {
			return fmt.Sprintf("record %d's length, in a written sector, overruns the length the prefix gives", i)
		}
		ok = known
		pos += k + int(n)
	}
	if ok && pos != body {
		return fmt.Sprintf("its records, all in written sectors, end %d bytes before the checksum the prefix places", body-pos)
	}
	return ""
}

// judgeLostPrefix judges an entry whose length prefix reads as zeros (it
// was not written, or a zero byte in a sector of its own). If the frame
// after it is whole (version, index, records and checksum all check), the
// bytes prove it was written whole: a flipped byte may have zeroed a
// sector's only byte, so the frame may have been acknowledged, and keeping
// it is right either way (a torn write whose frame reached the disk whole
// may be kept: nobody was told of it). Its prefix is restored from its
// length. Otherwise it is a torn write.
func judgeLostPrefix(v entryView, index uint64) tailVerdict {
	for k := 1; k <= binary.MaxVarintLen64 && v.off+k < len(v.data); k++ {
		start := v.off + k
		n, ok := wholeFrameAt(v.data[start:], index)
		if !ok || uvarintLen(uint64(n)) != k {
			continue
		}
		prefix := binary.AppendUvarint(nil, uint64(n))
		for i, b := range prefix {
			if v.known(v.off+i) && v.data[v.off+i] != b {
				return tailVerdict{reason: "a whole frame follows a length prefix that disagrees with it"}
			}
		}
		if !allZero(v.data[start+n:]) {
			return tailVerdict{reason: "bytes are written after the whole frame it holds"}
		}
		return tailVerdict{keep: &keptEntry{at: v.off, patch: prefix, frame: v.data[start : start+n], end: start + n,
			what: "its length prefix"}}
	}
	return tailVerdict{torn: true}
}

// wholeFrameAt returns the length of the valid frame for index at the start
// of b, found from its own structure (not from a length prefix).
func wholeFrameAt(b []byte, index uint64) (int, bool) {
	if len(b) < minFrame {
		return 0, false
	}
	h, err := parseHeader(b)
	if err != nil || h.index != index {
		return 0, false
	}
	pos := h.size
	for r := uint64(0); r < h.count; r++ {
		n, k := binary.Uvarint(b[pos:])
		if k <= 0 || n > uint64(len(b)-pos-k) {
			return 0, false
		}
		pos += k + int(n)
	}
	end := pos + checksumSize
	if end > len(b) || h.checkSum(b, end) != nil || xxhash.Sum64(b[:pos]) != binary.LittleEndian.Uint64(b[pos:end]) {
		return 0, false
	}
	return end, true
}

// versionBefore is the version of the frame before the entry at off of
// the last segment (data) of segs: the segment's entry that ends at off,
// or, when off is 0, the last entry of the segment before; 0 when there is
// none or it cannot be read.
func versionBefore(segs []segmentFile, data []byte, off int) byte {
	if off == 0 {
		if len(segs) < 2 {
			return 0
		}
		prev, err := os.ReadFile(segs[len(segs)-2].path)
		if err != nil {
			return 0
		}
		data, off = prev, len(prev)
	}
	var version byte
	for pos := 0; pos < off && !entriesEnd(data[pos:]); {
		n, k := binary.Uvarint(data[pos:])
		if k <= 0 || n == 0 || n > uint64(len(data)-pos-k) {
			return 0
		}
		version = data[pos+k]
		pos += k + int(n)
	}
	return version
}
