package wal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Frame versions, the first byte of every frame. Part of the on-disk
// format: never change the meaning of a version.
const (
	// Version is the version of every frame this package writes: version,
	// index, count, then a checksum of the entry's header (its length
	// prefix, version, index and count: headerSum), then the records.
	Version byte = 2
	// Version1 frames (written by orkwal before issue 21) have no header
	// checksum: version, index, count, records. They are still read.
	Version1 byte = 1
)

const (
	checksumSize  = 8 // the frame's last bytes: XXH64 of every byte before them
	headerSumSize = 4 // version 2: after the count
)

// maxRecords caps the record count a decoder accepts, so that a corrupt count
// cannot make it allocate without bound.
const maxRecords = 1 << 24

// errFrame describes why a frame does not decode; wrapped with position info.
var errFrame = errors.New("bad frame")

// appendEntry encodes records as one entry at index onto dst: the frame's
// length prefix, then the frame (appendFrame).
func appendEntry(dst []byte, index uint64, records [][]byte) []byte {
	n := frameSize(index, records)
	return appendFrameOf(binary.AppendUvarint(dst, uint64(n)), n, index, records)
}

// appendFrame encodes records as one frame at index onto dst, in the
// version this package writes.
//
//	version 2 ‖ uvarint index ‖ uvarint count ‖ header sum (4) ‖
//	count × (uvarint len ‖ record) ‖ XXH64 of all before (8)
func appendFrame(dst []byte, index uint64, records [][]byte) []byte {
	return appendFrameOf(dst, frameSize(index, records), index, records)
}

// appendFrameOf is appendFrame for a frame of n bytes (frameSize).
func appendFrameOf(dst []byte, n int, index uint64, records [][]byte) []byte {
	start := len(dst)
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, index)
	dst = binary.AppendUvarint(dst, uint64(len(records)))
	sum := headerSum(n, dst[start:])
	dst = binary.LittleEndian.AppendUint32(dst, sum)
	for _, r := range records {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	return binary.LittleEndian.AppendUint64(dst, xxhash.Sum64(dst[start:]))
}

// headerSum is a version 2 frame's header checksum: the low 32 bits of
// XXH64 of the entry's length prefix (uvarint of n, the frame's length)
// followed by the frame's version, index and count bytes (header). It
// binds the length to the frame's start, so that a damaged length prefix
// cannot pass for a torn write of a longer frame (torn.go).
func headerSum(n int, header []byte) uint32 {
	var b [2*binary.MaxVarintLen64 + 1]byte
	h := binary.AppendUvarint(b[:0], uint64(n))
	h = append(h, header...)
	return uint32(xxhash.Sum64(h))
}

// frameSize is the encoded size of a frame of records at index.
func frameSize(index uint64, records [][]byte) int {
	n := 1 + uvarintLen(index) + uvarintLen(uint64(len(records))) + headerSumSize + checksumSize
	for _, r := range records {
		n += uvarintLen(uint64(len(r))) + len(r)
	}
	return n
}

// EntrySize is the bytes an append of records at index adds to the log
// when its frame holds them alone (a frame that group commit shares with
// other appends' records takes less): the entry, as Size counts it.
func EntrySize(index uint64, records [][]byte) int64 {
	n := frameSize(index, records)
	return int64(uvarintLen(uint64(n)) + n)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// frameHeader is what a frame's first bytes say: its version, index and
// record count, and where its records start (size bytes in).
type frameHeader struct {
	version      byte
	index, count uint64
	sumAt        int // version 2: the header checksum's offset (0: none)
	size         int
}

// parseHeader reads the header at the start of frame (whose bytes may go
// on past the header, or stop after it). A version 2 header's checksum is
// read, not checked: see checkSum.
func parseHeader(frame []byte) (frameHeader, error) {
	if len(frame) == 0 {
		return frameHeader{}, fmt.Errorf("%w: no version byte", errFrame)
	}
	h := frameHeader{version: frame[0]}
	if h.version != Version && h.version != Version1 {
		return frameHeader{}, fmt.Errorf("%w: unknown version %d", errFrame, h.version)
	}
	b := frame[1:]
	var err error
	if h.index, b, err = readUvarint(b, "index"); err != nil {
		return frameHeader{}, err
	}
	if h.count, b, err = readUvarint(b, "count"); err != nil {
		return frameHeader{}, err
	}
	if h.count == 0 || h.count > maxRecords || h.count > uint64(len(b)) {
		return frameHeader{}, fmt.Errorf("%w: record count %d", errFrame, h.count)
	}
	h.size = len(frame) - len(b)
	if h.version == Version {
		if len(b) < headerSumSize {
			return frameHeader{}, fmt.Errorf("%w: no header checksum", errFrame)
		}
		h.sumAt = h.size
		h.size += headerSumSize
	}
	return h, nil
}

// checkSum checks the header checksum of frame (whose header is h) against
// the frame's length n; a version 1 frame has none to check.
func (h frameHeader) checkSum(frame []byte, n int) error {
	if h.sumAt == 0 {
		return nil
	}
	if got, want := headerSum(n, frame[:h.sumAt]), binary.LittleEndian.Uint32(frame[h.sumAt:]); got != want {
		return fmt.Errorf("%w: header checksum %08x, want %08x (of length %d, version, index %d, count %d)",
			errFrame, got, want, n, h.index, h.count)
	}
	return nil
}

// decodeFrame checks a frame and returns its index and records. The records
// alias frame.
func decodeFrame(frame []byte) (uint64, [][]byte, error) {
	if len(frame) < 1+1+1+checksumSize {
		return 0, nil, fmt.Errorf("%w: %d bytes is too short", errFrame, len(frame))
	}
	body := frame[:len(frame)-checksumSize]
	want := binary.LittleEndian.Uint64(frame[len(body):])
	if got := xxhash.Sum64(body); got != want {
		return 0, nil, fmt.Errorf("%w: checksum %016x, want %016x", errFrame, got, want)
	}
	h, err := parseHeader(body)
	if err == nil {
		err = h.checkSum(body, len(frame))
	}
	if err != nil {
		return 0, nil, err
	}
	records, err := decodeRecords(body[h.size:], h.count)
	return h.index, records, err
}

// decodeRecords reads count length-prefixed records that fill b exactly.
func decodeRecords(b []byte, count uint64) ([][]byte, error) {
	records := make([][]byte, 0, count)
	for i := uint64(0); i < count; i++ {
		n, rest, err := readUvarint(b, "record length")
		if err != nil {
			return nil, err
		}
		if n > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: record %d length %d overruns frame", errFrame, i, n)
		}
		records = append(records, rest[:n:n])
		b = rest[n:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errFrame, len(b))
	}
	return records, nil
}

func readUvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad %s varint", errFrame, what)
	}
	return v, b[n:], nil
}
