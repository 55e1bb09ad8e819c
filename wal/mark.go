package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The newest-segment mark (docs/format.md, "WAL segments").
//
// A segment file that was deleted, or emptied (zeroed, truncated), after
// its entries were acknowledged leaves a log that ends earlier and reads as
// whole: the entries of the segment before it, then nothing. Nothing in the
// other files says that more existed (a snapshot may be older; its index
// only says how far the log reached when it was taken). So the folder
// records, in the name of an empty file "newest-<20 digits>", the newest
// segment known to hold a durable entry: its name moves (rename, folder
// fsync) once the first entry written to a new segment is durable, before
// that entry is acknowledged, and at Open to the segment holding the last
// entry. Open refuses a folder whose marked segment is missing or holds no
// entry, as it refuses a gap between segments. The name is all: a rename is
// atomic, costs one folder fsync per segment (1 MiB of log), and needs no
// space. Neither listSegments nor tidwall/wal reads it as a segment (it
// does not start with 20 digits).

const markPrefix = "newest-"

// markName is the mark's file name for the segment whose first index is first.
func markName(first uint64) string { return markPrefix + segmentName(first) }

// readMark returns the index the folder's mark names (0 when there is none;
// the highest when a crash left more than one).
func readMark(dir string) (uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var mark uint64
	for _, de := range des {
		num, ok := strings.CutPrefix(de.Name(), markPrefix)
		if !ok || len(num) != 20 {
			continue
		}
		if idx, err := strconv.ParseUint(num, 10, 64); err == nil {
			mark = max(mark, idx)
		}
	}
	return mark, nil
}

// setMark moves the folder's mark from index from (0: there is none) to
// to (0: remove it), and fsyncs the folder. A power cut before that fsync
// leaves the mark where it was (or, after a creation or removal, none):
// a mark older than the log's end, which Open accepts and moves again;
// the fsync comes before the entry that needs the new mark is acknowledged
// (Append) or the log is served (Open's markLast), and before CutAt
// removes what the old mark names.
func setMark(dir string, from, to uint64) error {
	var err error
	target := filepath.Join(dir, markName(to))
	switch {
	case from == to:
		return nil
	case from == 0:
		var f *os.File
		if f, err = createFile(target, 0); err == nil {
			err = f.Close()
		}
	case to == 0:
		target = filepath.Join(dir, markName(from))
		err = removeFile(target)
	default:
		err = renameFile(filepath.Join(dir, markName(from)), target)
	}
	if err != nil {
		return fmt.Errorf("wal: mark segment %d as the newest (%s): %w", to, target, err)
	}
	return syncDirFor(dir, fmt.Sprintf("mark segment %d as the newest", to))
}

// errMarkedGone is the reason of a refusal by checkMark.
var errMarkedGone = errors.New("the log reached this segment")

// checkMark checks dir's segments against its mark: the marked segment
// must exist, and, when it is the last, hold an entry (tailLast, the last
// index of the last segment, at least its first index). Segments after it
// are checked by replay (a gap, an empty segment before another). A
// folder without a mark (written by an earlier version) passes.
func checkMark(dir string, segs []segmentFile, mark, tailLast uint64) error {
	if mark == 0 || len(segs) > 0 && mark < segs[0].first {
		return nil // no mark, or one older than the log's front (an earlier version's front truncation went past it)
	}
	path := filepath.Join(dir, segmentName(mark))
	hint := fmt.Sprintf("%v (%s); entries from index %d on are missing. Restore the wal folder from a backup, or cut the log at index %d to go on without them",
		errMarkedGone, markName(mark), mark, mark)
	found := -1
	for i, s := range segs {
		if s.first == mark {
			found = i
		}
	}
	switch {
	case found < 0:
		return &CorruptError{Segment: path, Index: mark, Reason: "segment missing: " + hint}
	case found == len(segs)-1 && tailLast < mark:
		return &CorruptError{Segment: path, Index: mark, Reason: "segment holds no entry: " + hint}
	}
	return nil
}

// markFor is the segment the mark should name once the log ends at last:
// the one holding last (0 when the log is empty).
func markFor(segs []segmentFile, last uint64) uint64 {
	var m uint64
	for _, s := range segs {
		if s.first <= last {
			m = s.first
		}
	}
	return m
}
