package wal

import (
	"errors"
	"os"
)

// VerifyDir reads the log in dir without changing it, calling fn for every
// whole entry in order, like ReplayDir. A bad frame at the end of the last
// segment that recovery would cut as a torn tail is returned as torn (with
// its position) rather than as an error; anything else bad is a
// *CorruptError in err.
func VerifyDir(dir string, fn func(index uint64, records [][]byte) error) (torn *CorruptError, err error) {
	return VerifyDirFrom(dir, 1, fn)
}

// VerifyDirFrom is VerifyDir for the entries from index from on (the log
// after a snapshot).
func VerifyDirFrom(dir string, from uint64, fn func(index uint64, records [][]byte) error) (torn *CorruptError, err error) {
	segs, err := resolvedSegments(dir)
	if err != nil || len(segs) == 0 {
		return nil, err
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
	if int(ce.Offset) > len(data) || laterFrameExists(data[ce.Offset:], ce.Index) {
		ce.Reason += " (followed by valid frames: not a torn tail)"
		return nil, ce
	}
	return ce, nil
}
