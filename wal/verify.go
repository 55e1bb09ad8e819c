package wal

import (
	"errors"
	"os"
)

// VerifyDir reads the log in dir without changing it, calling fn for every
// whole entry in order, like ReplayDir. A bad frame at the end of the last
// segment that recovery would cut as a torn write (or keep, restoring its
// length prefix: fn sees it then) is returned as torn (with its position
// and what boot does) rather than as an error; anything else bad is a
// *CorruptError in err.
func VerifyDir(dir string, fn func(index uint64, records [][]byte) error) (torn *CorruptError, err error) {
	return VerifyDirFrom(dir, 1, fn)
}

// VerifyDirFrom is VerifyDir for the entries from index from on (the log
// after a snapshot).
func VerifyDirFrom(dir string, from uint64, fn func(index uint64, records [][]byte) error) (torn *CorruptError, err error) {
	mark, err := readMark(dir)
	if err != nil {
		return nil, err
	}
	segs, err := resolvedSegments(dir)
	if err != nil {
		return nil, err
	}
	var seen uint64 // the last index read
	torn, err = verifySegments(dir, segs, from, func(index uint64, records [][]byte) error {
		seen = index
		return fn(index, records)
	})
	if err == nil {
		err = checkMark(dir, segs, mark, seen)
	}
	if err != nil {
		return nil, err
	}
	return torn, nil
}

// verifySegments is VerifyDirFrom on the segments segs of dir, less the
// mark's check.
func verifySegments(dir string, segs []segmentFile, from uint64, fn func(index uint64, records [][]byte) error) (torn *CorruptError, err error) {
	if len(segs) == 0 {
		return nil, nil
	}
	last := segs[len(segs)-1]
	err = ReplayDir(dir, from, fn)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != last.path || ce.Offset == 0 && ce.Index != last.first {
		return nil, err
	}
	data, rerr := os.ReadFile(last.path)
	if rerr != nil {
		return nil, err
	}
	if int(ce.Offset) > len(data) {
		return nil, err
	}
	verdict := judgeTail(data, int(ce.Offset), ce.Index, versionBefore(segs, data, int(ce.Offset)))
	switch {
	case verdict.keep != nil:
		_, records, derr := decodeFrame(verdict.keep.frame)
		if derr == nil && ce.Index >= from {
			derr = fn(ce.Index, records)
		}
		if derr != nil {
			return nil, derr
		}
		ce.Reason += "; its frame is whole: the next boot restores " + verdict.keep.what + " and keeps it"
		ce.KeptEnd = int64(verdict.keep.end)
		return ce, nil
	case !verdict.torn:
		ce.Reason += "; not a torn write: " + verdict.reason
		return nil, ce
	}
	return ce, nil
}
