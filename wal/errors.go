package wal

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers test them with errors.Is.
var (
	// ErrCorrupt: a bad frame that is not a torn tail, a gap in indexes, a
	// missing segment. Boot must refuse; see CorruptError for the position.
	ErrCorrupt = errors.New("wal: corrupt log")
	// ErrPoisoned: an earlier write or fsync failed; the Log accepts no more
	// appends until it is reopened.
	ErrPoisoned = errors.New("wal: log poisoned by an earlier write or fsync failure")
	// ErrSync marks a poisoning by a failed fsync (of a segment or the
	// folder), as opposed to a failed write.
	ErrSync = errors.New("wal: fsync failed")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("wal: log closed")
	// ErrLocked: another process holds the data folder.
	ErrLocked = errors.New("wal: data folder in use")
)

// CorruptError says where corruption was found. It matches ErrCorrupt.
type CorruptError struct {
	Segment string // file path
	Offset  int64  // byte offset of the entry in the segment
	Index   uint64 // the index expected at that offset
	Reason  string
	// KeptEnd, from VerifyDir only, is where the bad last entry ends when
	// the next boot keeps it (a whole frame some of whose bytes read as
	// zeros: Open writes them back and fsyncs); 0 otherwise.
	KeptEnd int64
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: corrupt log: segment %s offset %d index %d: %s",
		e.Segment, e.Offset, e.Index, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
