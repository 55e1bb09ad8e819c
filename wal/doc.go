// Package wal is orkwal's write-ahead log: an append-only sequence of
// checksummed batch frames stored in segment files (the format of
// github.com/tidwall/wal's binary log; see segments for why this package
// writes them itself).
// It treats record payloads as opaque bytes; it knows nothing of orkwal.
//
// # Format
//
// A log is a folder of segment files, each named by the 20-digit decimal
// index of its first entry (00000000000000000001, ...). A segment is a
// sequence of entries, each `uvarint(len) || frame` (len ≥ 1), then, in the
// tail segment, zero padding: the entries end at the end of the file or at
// a zero byte followed by zeros only (see segments). One entry
// holds exactly one frame; one frame is one commit of one or more records:
//
//	offset  size      field
//	0       1         version: 2 (Version)
//	1       1..10     uvarint index: the entry's position in the log (from 1)
//	.       1..10     uvarint count: number of records, at least 1
//	.       4         header checksum: low 32 bits (little endian) of the
//	                  xxhash64 of uvarint(len) || version, index and count
//	.       ...       count times: uvarint(len) || record payload
//	end-8   8         xxhash64 (little endian) of every byte before it
//
// A frame is valid only as a whole: its checksum covers every record in it,
// so a batch of records is committed or not, never in part. The index stored
// in the frame must equal the entry's position, which catches misplaced and
// missing entries. The header checksum binds the entry's length to the
// frame's start, so that recovery never takes a damaged length prefix for a
// torn write (torn.go). Frames of version 1 (Version1: no header checksum),
// written before it, are still read; a log holds version 1 frames, then
// version 2 frames. docs/format.md carries the same tables and the record
// payloads.
//
// # Durability
//
// This package owns every write and fsync.
//  1. Append encodes one frame, writes it with one pwrite(2) inside the
//     tail's zero padding (padding it first when it does not fit), and
//     fdatasyncs the segment file.
//  2. When the write created a segment file (the tail had reached
//     SegmentSize), the folder is fsynced too, before Append returns.
//  3. Only then does Append return: a nil error means durable.
//  4. Close truncates the tail's zero padding (fsync), so that a stopped
//     folder holds exactly its entries (tidwall/wal reads it as is).
//  5. A failed write or fsync poisons the Log: every later Append fails with
//     ErrPoisoned and the fsync is never retried (the page cache can no
//     longer be trusted). Reopening runs recovery from what is on disk.
//
// # Recovery (Open)
//
//  1. The last segment is scanned frame by frame, up to its end or its
//     padding. The first frame that is incomplete, has a bad checksum, a
//     wrong index or a zero length (not padding) is judged (judgeTail,
//     torn.go): a torn write (some 512-byte sector of it reads as zeros or
//     lies past the end of the file, and its written sectors agree with
//     its length) is cut: the bytes from there to the end, less trailing
//     zeros, are copied to "<segment>.broken-<unix nanos>" (fsynced, then
//     the folder fsynced), the segment is truncated to the last whole frame
//     (made durable by step 2's fsync, see cutTail), and a log line says
//     what was cut. A whole frame whose
//     length prefix alone, or whose checksum's last 1 to 4 bytes alone,
//     read as zeros is kept (those bytes written back). Anything else is corruption of a frame written whole
//     (acknowledged): a *CorruptError, and nothing changes.
//     Only the newest KeepBroken copies are kept (the disk stays bounded
//     however often the daemon crashes). Before that, what a crash left of
//     an earlier version's front truncation is finished (resolveLegacy).
//  2. The tail segment and the folder are fsynced: what an earlier process
//     wrote and never fsynced (it was killed first), and what step 1
//     changed, is made durable before anything new is acknowledged on top
//     of it. A failure at any step is an ErrSync (or the failed call's
//     error) naming the file and what it was doing; every recovery call
//     goes through fsio.go's seam, which the tests record.
//  3. Every other segment is checked when it is read (Replay, Verify): a bad
//     frame there, a gap between segments or a missing segment is corruption,
//     reported as a *CorruptError with the segment, offset, index and reason,
//     and never skipped.
//
// A front truncation (TruncateFront) only removes whole segments, oldest
// first, fsyncing the folder after each: no file is rewritten, and what a
// crash keeps of it is a prefix.
//
// Concurrent Append calls are group-committed: one commit takes every
// waiting call, writes their records as one frame with one fsync, and wakes
// the callers. An idle log (the last commit had one caller and none queued)
// commits at once, on the caller's goroutine: nothing waits for a batch to
// fill. A busy log commits on a committer goroutine, which first waits for
// as many calls as were in flight at the end of the last commit, for at most
// an eighth of that commit's duration (1 ms at most): without that wait,
// the callers woken by one commit miss the next and the callers split into
// two groups that take turns, each fsync carrying half of them.
package wal
