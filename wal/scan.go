package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// segmentFile is one segment of the log folder.
type segmentFile struct {
	path  string
	first uint64 // index of its first entry, from its name
}

// listSegments returns the folder's segment files in index order. Only names
// of exactly 20 digits count (an earlier version's .START file is resolved
// by Open, see resolveLegacy, and seen as resolved by the readers of a
// folder that is not open, see resolvedSegments; .broken copies are
// ignored).
func listSegments(dir string) ([]segmentFile, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []segmentFile
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || len(name) != 20 {
			continue
		}
		first, err := strconv.ParseUint(name, 10, 64)
		if err != nil || first == 0 {
			continue
		}
		segs = append(segs, segmentFile{path: filepath.Join(dir, name), first: first})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].first < segs[j].first })
	return segs, nil
}

// entry is one decoded frame and where it was found.
type entry struct {
	offset  int64
	size    int64 // bytes of the entry, length prefix included
	index   uint64
	records [][]byte
}

// scanSegment decodes data (a whole segment whose first index is first),
// calling fn for each valid entry in order. It stops at the first entry that
// does not decode and returns a *CorruptError describing it, or nil when the
// entries end where the segment does, or where its zero padding begins
// (entriesEnd).
func scanSegment(path string, data []byte, first uint64, fn func(entry) error) error {
	var off int64
	for index := first; !entriesEnd(data[off:]); index++ {
		e, err := nextEntry(data[off:], index)
		if err != nil {
			return &CorruptError{Segment: path, Offset: off, Index: index, Reason: err.Error()}
		}
		e.offset = off
		if err := fn(e); err != nil {
			return err
		}
		off += e.size
	}
	return nil
}

// nextEntry decodes the entry at the start of b, expected to be index.
func nextEntry(b []byte, index uint64) (entry, error) {
	n, k := binary.Uvarint(b)
	switch {
	case k <= 0:
		return entry{}, fmt.Errorf("%w: bad length prefix", errFrame)
	case n == 0:
		return entry{}, fmt.Errorf("%w: zero length", errFrame)
	case n > uint64(len(b)-k):
		return entry{}, fmt.Errorf("%w: length %d overruns the segment (%d bytes left)", errFrame, n, len(b)-k)
	}
	got, records, err := decodeFrame(b[k : k+int(n)])
	if err != nil {
		return entry{}, err
	}
	if got != index {
		return entry{}, fmt.Errorf("%w: frame says index %d", errFrame, got)
	}
	return entry{size: int64(k) + int64(n), index: index, records: records}, nil
}

func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// entriesEnd tells whether rest, what follows the entries read so far in a
// segment, holds no more entry: it is empty, or all zero bytes (the
// padding of a tail segment: see segments). An entry never starts with a
// zero byte (its length is at least 1), so a zero byte followed by anything
// else is a bad entry, not an end.
func entriesEnd(rest []byte) bool {
	if len(rest) == 0 {
		return true
	}
	if rest[0] != 0 {
		return false
	}
	return allZero(rest)
}

// allZero tells whether every byte of b is zero.
func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
