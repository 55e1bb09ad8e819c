package wal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Version is the frame format version, the first byte of every frame.
// Part of the on-disk format: never change the meaning of a version.
const Version byte = 1

const checksumSize = 8

// maxRecords caps the record count a decoder accepts, so that a corrupt count
// cannot make it allocate without bound.
const maxRecords = 1 << 24

// errFrame describes why a frame does not decode; wrapped with position info.
var errFrame = errors.New("bad frame")

// appendFrame encodes records as one frame at index onto dst.
func appendFrame(dst []byte, index uint64, records [][]byte) []byte {
	start := len(dst)
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, index)
	dst = binary.AppendUvarint(dst, uint64(len(records)))
	for _, r := range records {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	sum := xxhash.Sum64(dst[start:])
	return binary.LittleEndian.AppendUint64(dst, sum)
}

// frameSize is the encoded size of a frame of records at index.
func frameSize(index uint64, records [][]byte) int {
	n := 1 + uvarintLen(index) + uvarintLen(uint64(len(records))) + checksumSize
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
	if body[0] != Version {
		return 0, nil, fmt.Errorf("%w: unknown version %d", errFrame, body[0])
	}
	return decodeBody(body[1:])
}

func decodeBody(b []byte) (uint64, [][]byte, error) {
	index, b, err := readUvarint(b, "index")
	if err != nil {
		return 0, nil, err
	}
	count, b, err := readUvarint(b, "count")
	if err != nil {
		return 0, nil, err
	}
	if count == 0 || count > maxRecords || count > uint64(len(b)) {
		return 0, nil, fmt.Errorf("%w: record count %d", errFrame, count)
	}
	records := make([][]byte, 0, count)
	for i := uint64(0); i < count; i++ {
		var n uint64
		if n, b, err = readUvarint(b, "record length"); err != nil {
			return 0, nil, err
		}
		if n > uint64(len(b)) {
			return 0, nil, fmt.Errorf("%w: record %d length %d overruns frame", errFrame, i, n)
		}
		records = append(records, b[:n:n])
		b = b[n:]
	}
	if len(b) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes", errFrame, len(b))
	}
	return index, records, nil
}

func readUvarint(b []byte, what string) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: bad %s varint", errFrame, what)
	}
	return v, b[n:], nil
}
