package wal

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DefaultSegmentSize is the size at which the next write starts a new
// segment file. No segment is held in memory (see segments), so the size
// only trades the number of files (a creation and a folder fsync each)
// against the granularity of a front truncation, which keeps up to one
// segment of entries older than it needs.
const DefaultSegmentSize = 1 << 20

// Options configure a Log. The zero value is valid.
type Options struct {
	SegmentSize int // bytes; DefaultSegmentSize when 0
	// PadStep is the step in which the tail segment's zero padding grows
	// (see segments): 256 KiB when 0, at most that. Tests set small steps
	// to cover entries that cross one.
	PadStep int
	Logger  *slog.Logger // slog.Default() when nil
	// Fault, when set, is called at each I/O point of an append and may
	// return an error to inject a failure there. Tests only; nil otherwise.
	// It is the work of the package's one fault seam at those points
	// (fsio.go), whose own tests see the same points.
	Fault Fault
}

// Op names an I/O point of an append, for Fault.
type Op string

const (
	// OpWrite: after the frame was handed to the file (as a write that
	// failed part way would leave it).
	OpWrite Op = "write"
	// OpSync: instead of the segment's fsync.
	OpSync Op = "fsync"
	// OpDirSync: instead of the folder's fsync after a segment was created.
	OpDirSync Op = "dirsync"
	// OpTruncate: before a front truncation (index is its new first entry).
	OpTruncate Op = "truncate"
	// OpOpenSync: in Open, before the fsync of the tail segment and of the
	// folder that make what an earlier process wrote durable (index 0).
	OpOpenSync Op = "open-fsync"
	// OpMark: after the fsyncs of a segment's first entry, before the
	// folder's mark moves to that segment (a rename and a folder fsync;
	// see mark.go).
	OpMark Op = "mark"
)

// Fault injects a failure at op while appending the frame at index.
type Fault func(op Op, index uint64) error

func (o Options) withDefaults() Options {
	if o.PadStep <= 0 || o.PadStep > padChunk {
		o.PadStep = padChunk
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Log is an open write-ahead log. Append is safe for concurrent use; Replay
// and Verify read the files and may run before or alongside appends.
type Log struct {
	dir  string
	opts Options

	requests sync.Pool // of *request

	qmu        sync.Mutex // guards the fields up to wmu
	queue      []*request
	spare      []*request    // the queue before last, emptied: reused by the next commit
	merged     [][]byte      // the records of a commit of several appends; the commit in progress owns it
	committing bool          // a commit (gather, frame, fsync) is in progress
	closing    bool          // Close has begun: no new appends
	kick       chan struct{} // capacity 1: "the queue is not empty"
	stopped    chan struct{} // closed when the committer has returned
	// Gathering (see gather): expected is how many appends were in flight
	// when the last commit ended (those it woke plus those queued); lastCommit
	// is how long that commit's write and fsync took.
	expected   int
	lastCommit time.Duration
	gathering  bool
	arrived    chan struct{}                        // capacity 1: "an append queued while gathering"
	after      func(time.Duration) <-chan time.Time // time.After; tests replace it
	removing   func(path string)                    // tests: called before each removal of TruncateFront

	// tmu is held for the whole of a TruncateFront, which releases wmu
	// while it removes files: Close takes it, so that no removal outlives
	// the Log (an in-process reopen would otherwise see a truncation still
	// in progress as a gap), and truncations never overlap.
	tmu sync.Mutex

	wmu    sync.Mutex // guards everything below; held by the committer
	segs   *segments
	last   uint64 // index of the last durable entry
	poison error  // first write/fsync failure; sticky
	closed bool
	buf    []byte // reused: uvarint(len) || frame; let go after a burst (keepBuf)

	// Metrics, safe to read at any time.
	WriteLatency Histogram // handing a frame to the file
	SyncLatency  Histogram // fsync of the segment
	cutBytes     int64     // torn-tail bytes cut by Open
}

// request is one Append call. Requests are pooled: under many appenders an
// allocation per call (the struct and a channel to close) fed the garbage
// collector enough to show in the p99.9 (BenchmarkAppendTail: GC pauses).
type request struct {
	records [][]byte
	index   uint64
	err     error
	done    chan struct{} // capacity 1: commit sends once; the caller receives
}

// newRequest is the requests pool's New. The pool is the Log's own, not
// the package's: a channel belongs to the synctest bubble that made it, and
// a Log is used within one.
func newRequest() any { return &request{done: make(chan struct{}, 1)} }

// Open recovers the log in dir (creating it if needed) and opens it for
// appending. A torn tail is cut (see the package doc); mid-log corruption in
// the last segment is returned as a *CorruptError.
func Open(dir string, opts Options) (*Log, error) {
	opts = opts.withDefaults()
	if err := mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	// Before anything is written in it: a power cut after a segment's
	// fsync must not lose the folder's name.
	if err := syncDirFor(filepath.Dir(dir), "make the wal folder's name durable"); err != nil {
		return nil, err
	}
	if err := resolveLegacy(dir, opts.Logger); err != nil {
		return nil, err
	}
	mark, err := readMark(dir)
	if err != nil {
		return nil, err
	}
	cut, end, err := repairTail(dir, mark, opts.Logger)
	if err != nil {
		return nil, err
	}
	segs, err := openSegments(dir, opts.SegmentSize, opts.PadStep, opts.Fault, end)
	if err != nil {
		return nil, err
	}
	if err := segs.markLast(mark); err != nil {
		segs.close()
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, segs: segs, last: segs.last, cutBytes: cut, requests: sync.Pool{New: newRequest},
		kick: make(chan struct{}, 1), arrived: make(chan struct{}, 1), stopped: make(chan struct{}),
		after: time.After}
	go l.committer()
	return l, nil
}

// CutBytes is how many torn-tail bytes Open cut.
func (l *Log) CutBytes() int64 { return l.cutBytes }

// Dir is the log's folder.
func (l *Log) Dir() string { return l.dir }

// LastIndex is the index of the last durable entry (0 when empty).
func (l *Log) LastIndex() uint64 {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.last
}

// FirstIndex is the index of the first entry still in the log.
func (l *Log) FirstIndex() (uint64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.segs.first, nil
}

// Append makes records durable as part of one frame and returns the frame's
// index. It returns only after the frame is fsynced; a nil error means
// durable. Concurrent calls share frames and fsyncs (group commit). On an
// idle log (the last commit had one append and left none queued) a call
// that finds no commit in progress commits everything queued, once, itself:
// no handoff, no waiting. Otherwise the committer goroutine commits, after
// gathering the appends of the last commit back into one frame (see
// gather). No caller commits more than one frame.
func (l *Log) Append(records [][]byte) (uint64, error) {
	if len(records) == 0 {
		return 0, errors.New("wal: append of no records")
	}
	l.qmu.Lock()
	if l.closing {
		l.qmu.Unlock()
		return 0, ErrClosed
	}
	req := l.requests.Get().(*request)
	req.records = records
	l.queue = append(l.queue, req)
	switch {
	case l.committing:
		if l.gathering {
			signal(l.arrived)
		}
		l.qmu.Unlock()
	case l.expected <= 1:
		l.commitQueued() // unlocks qmu; req was in it, and is answered
	default:
		l.qmu.Unlock()
		signal(l.kick)
	}
	<-req.done
	index, err := req.index, req.err
	*req = request{done: req.done}
	l.requests.Put(req)
	return index, err
}

// signal makes a non-blocking send on a channel of capacity 1.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// commitQueued commits the queue as one frame, after gathering. Called with
// qmu held and no commit in progress; returns with qmu released, after
// waking the committer if more is queued (or Close waits).
func (l *Log) commitQueued() {
	l.committing = true
	l.gather()
	batch := l.queue
	l.queue, l.spare = l.spare, nil // the two queues take turns
	l.qmu.Unlock()
	start := time.Now()
	l.commit(batch)
	took := time.Since(start)
	l.qmu.Lock()
	l.committing = false
	l.expected = len(batch) + len(l.queue)
	l.lastCommit = took
	clear(batch) // its requests are back in the pool
	l.spare = batch[:0]
	wake := len(l.queue) > 0 || l.closing
	l.qmu.Unlock()
	if wake {
		signal(l.kick)
	}
}

// maxGather bounds how long a commit waits for appends to gather.
const maxGather = time.Millisecond

// gatherShare: a commit waits at most 1/gatherShare of the last commit's
// duration for appends to gather. The woken appenders come back after a
// scheduling delay, not after a share of an fsync, so a long wait mostly
// idles the disk when some of them are late (at 256 appenders a frame
// carries about 90% of them). Measured on this machine, three rounds of
// BenchmarkAppend interleaved, 2 and 8: 256 appenders 229-282k against
// 301-323k records/s (p99.9 3.4-4.9 against 3.0-3.3 ms); 64 about 122k
// both; 8 appenders 25.8-27.4k against 23.7-25.6k.
const gatherShare = 8

// gather waits, before a commit takes the queue, for as many appends as
// were in flight when the last commit ended, for at most 1/gatherShare of
// that commit's duration (and maxGather). Called with qmu held; may release
// it while waiting.
//
// Why: when n appenders each wait for their own fsync, the ones woken by
// commit k come back while commit k+1 (holding those that queued during k)
// is being fsynced, so they miss it: without a wait the appenders split into
// two groups that take turns, and each fsync carries about n/2 of them.
// Waiting a fraction of an fsync for the woken ones to come back merges the
// groups. An idle log never waits (expected <= 1), nor does a queue that
// already holds the expected appends; it is PostgreSQL's commit_delay,
// applied only when the last commit shows concurrent appenders.
func (l *Log) gather() {
	if len(l.queue) >= l.expected || l.closing {
		return
	}
	wait := min(l.lastCommit/gatherShare, maxGather)
	if wait <= 0 {
		return
	}
	select { // drop a signal left from an earlier gather
	case <-l.arrived:
	default:
	}
	l.gathering = true
	timeout := l.after(wait)
	for len(l.queue) < l.expected && !l.closing {
		l.qmu.Unlock()
		expired := false
		select {
		case <-l.arrived:
		case <-timeout:
			expired = true
		}
		l.qmu.Lock()
		if expired {
			break
		}
	}
	l.gathering = false
}

// committer commits what queues up while a commit is in progress, until
// Close.
func (l *Log) committer() {
	defer close(l.stopped)
	for {
		<-l.kick
		for {
			l.qmu.Lock()
			switch {
			case l.committing:
				l.qmu.Unlock() // its committer wakes us when done
			case len(l.queue) > 0:
				l.commitQueued()
				continue
			case l.closing:
				l.qmu.Unlock()
				return
			default:
				l.qmu.Unlock()
			}
			break
		}
	}
}

// commit writes every request of batch as one frame, fsyncs, and wakes them.
// One commit runs at a time, so l.merged is its own.
func (l *Log) commit(batch []*request) {
	records := batch[0].records
	if len(batch) > 1 {
		for _, r := range batch {
			l.merged = append(l.merged, r.records...)
		}
		records = l.merged
	}
	index, err := l.write(records)
	clear(l.merged)
	l.merged = l.merged[:0]
	for _, r := range batch {
		r.index, r.err = index, err
		r.done <- struct{}{} // r may be reused once received: not touched after
	}
}

// maxKeptBuf is the size up to which the frame buffer is always kept.
const maxKeptBuf = 64 << 10

// keepBuf lets go of a frame buffer past maxKeptBuf once a frame used less
// than a quarter of it: a burst's frame (a dispatch of 5,000 tasks is
// about 400 KB) is not kept for the small frames after it (issue 27:
// memory with many running tasks), while frames of a steady size keep
// theirs. Called with wmu held.
func (l *Log) keepBuf() {
	if cap(l.buf) > maxKeptBuf && len(l.buf) < cap(l.buf)/4 {
		l.buf = nil
	}
}

// write appends one frame and makes it durable. Callers hold no lock.
func (l *Log) write(records [][]byte) (uint64, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	switch {
	case l.closed:
		return 0, ErrClosed
	case l.poison != nil:
		return 0, fmt.Errorf("%w: %w", ErrPoisoned, l.poison)
	}
	index := l.last + 1
	l.buf = appendEntry(l.buf[:0], index, records)
	defer l.keepBuf()
	start := time.Now()
	created, err := l.segs.write(index, l.buf)
	if err == nil {
		err = l.fault(OpWrite, index, l.segs.tail.Name())
	}
	l.WriteLatency.Observe(time.Since(start))
	if err != nil {
		err = fmt.Errorf("write index %d: %w", index, err)
		if uerr := l.segs.undo(index); errors.Is(uerr, ErrSync) {
			err = fmt.Errorf("%w (%w)", uerr, err)
		} else if uerr != nil {
			l.opts.Logger.Warn("wal: a reopen will cut or replay the failed write", "err", uerr)
		}
		return 0, l.fail(err)
	}
	start = time.Now()
	if err := l.sync(OpSync, index, l.segs.tail.Name(), l.segs.sync); err != nil {
		return 0, l.fail(fmt.Errorf("%w: index %d: %w", ErrSync, index, err))
	}
	l.SyncLatency.Observe(time.Since(start))
	if created {
		if err := l.sync(OpDirSync, index, l.dir, func() error { return SyncDir(l.dir) }); err != nil {
			return 0, l.fail(fmt.Errorf("%w: folder after index %d: %w", ErrSync, index, err))
		}
	}
	if l.segs.bytes == len(l.buf) && l.segs.mark < index {
		// The tail's first entry is durable (and the segment's name: a
		// segment an earlier Open left empty was fsynced by it): mark it
		// before it is acknowledged, so that losing the segment is never
		// silent.
		if err := l.sync(OpMark, index, l.dir, func() error { return l.segs.markNewest(index) }); err != nil {
			return 0, l.fail(fmt.Errorf("%w: marking segment %d: %w", ErrSync, index, err))
		}
	}
	l.last = index
	return index, nil
}

// fault is the append's fault point op (faultAt), at path.
func (l *Log) fault(op Op, index uint64, path string) error {
	return faultAt(l.opts.Fault, op, index, path)
}

// sync runs an fsync of path (a file or folder), or the fault injected in
// its place.
func (l *Log) sync(op Op, index uint64, path string, fsync func() error) error {
	if err := l.fault(op, index, path); err != nil {
		return err
	}
	return fsync()
}

// fail poisons the log: no later append succeeds, no fsync is retried.
func (l *Log) fail(err error) error {
	l.poison = err
	l.opts.Logger.Error("wal: poisoned; no more appends until reopened", "err", err)
	return fmt.Errorf("%w: %w", ErrPoisoned, err)
}

// Err returns the error that poisoned the log, or nil.
func (l *Log) Err() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.poison
}

// Close releases the log. Every acknowledged append is already durable;
// appends queued when Close is called are committed first. The tail's zero
// padding is truncated (fsynced) unless the log is poisoned.
func (l *Log) Close() error {
	l.qmu.Lock()
	wasClosing := l.closing
	l.closing = true
	l.qmu.Unlock()
	if !wasClosing {
		signal(l.kick)
		signal(l.arrived)
	}
	<-l.stopped
	l.tmu.Lock()
	defer l.tmu.Unlock()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.poison == nil {
		// A cleanly closed folder holds exactly its entries, in tidwall/wal's
		// format: readers that take a zero byte for an empty entry see no
		// padding (docs/format.md, "WAL segments"). The next Open pads again.
		err = l.segs.unpad()
	}
	if cerr := l.segs.close(); err == nil && l.poison == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: close: %w", err)
	}
	return nil
}

// FirstIndexDir is the index of the first entry of the log in dir, which
// is not open, as Open will see it (resolvedSegments); 0 when it has no
// segment.
func FirstIndexDir(dir string) (uint64, error) {
	segs, err := resolvedSegments(dir)
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	return segs[0].first, nil
}

// Replay calls fn for every entry with index >= from, in order, reading the
// segment files directly. Corruption, a gap or a missing segment stops it
// with a *CorruptError. The records passed to fn are only valid during the
// call.
func (l *Log) Replay(from uint64, fn func(index uint64, records [][]byte) error) error {
	return ReplayDir(l.dir, from, fn)
}

// ReplayDir is Replay on a folder that is not open (a stopped daemon's),
// read as Open will see it (resolvedSegments).
func ReplayDir(dir string, from uint64, fn func(index uint64, records [][]byte) error) error {
	segs, err := resolvedSegments(dir)
	if err != nil {
		return err
	}
	if len(segs) > 0 && from > 0 && segs[0].first > from {
		return &CorruptError{Segment: segs[0].path, Index: from,
			Reason: fmt.Sprintf("log starts at index %d: entries %d..%d are missing", segs[0].first, from, segs[0].first-1)}
	}
	next := uint64(0) // expected index of the next entry; 0 = not known yet
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].first <= from {
			continue // every entry of s is before from
		}
		if next != 0 && s.first != next {
			return &CorruptError{Segment: s.path, Index: next,
				Reason: fmt.Sprintf("segment starts at index %d: entries %d..%d are missing", s.first, next, s.first-1)}
		}
		end, err := replaySegment(s, from, fn)
		if err != nil {
			return err
		}
		next = end
	}
	return nil
}

// replaySegment replays one segment and returns the index after its last.
func replaySegment(s segmentFile, from uint64, fn func(uint64, [][]byte) error) (uint64, error) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		return 0, fmt.Errorf("wal: read %s: %w", s.path, err)
	}
	next := s.first
	err = scanSegment(s.path, data, s.first, func(e entry) error {
		next = e.index + 1
		if e.index < from {
			return nil
		}
		return fn(e.index, e.records)
	})
	return next, err
}

// inCommit reports whether a commit is in progress (tests).
func (l *Log) inCommit() bool {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return l.committing
}

// queued is the number of appends waiting for the next commit (tests).
func (l *Log) queued() int {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return len(l.queue)
}

// TruncateFront removes the segment files whose entries all come before
// index, oldest first, fsyncing the folder after each, and returns once
// all are gone. The segment holding index is kept whole, so FirstIndex may
// stay a little before index (by at most one segment): replay skips what it
// does not need. A crash in the middle leaves a prefix of those files
// removed, and a truncation undone by a crash only leaves entries that
// replay skips. The removals run without the write lock: appends go on
// meanwhile; Close waits for them. A failure poisons the log,
// as a failed append does.
func (l *Log) TruncateFront(index uint64) error {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	l.wmu.Lock()
	switch {
	case l.closed:
		l.wmu.Unlock()
		return ErrClosed
	case l.poison != nil:
		l.wmu.Unlock()
		return fmt.Errorf("%w: %w", ErrPoisoned, l.poison)
	}
	if err := l.fault(OpTruncate, index, l.dir); err != nil {
		l.wmu.Unlock()
		return err
	}
	segs, err := l.segs.before(index)
	l.wmu.Unlock()
	if err == nil {
		err = removeFront(l.dir, segs[:len(segs)-1], l.removing)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err != nil {
		return l.fail(fmt.Errorf("truncate front to index %d: %w", index, err))
	}
	l.segs.first = segs[len(segs)-1].first
	return nil
}

// statFile is os.Stat; tests replace it.
var statFile = os.Stat

// Size is the total size of the segment files' entries, in bytes: their
// files' sizes less the tail's zero padding. A segment that a concurrent
// TruncateFront removes between the listing and its stat counts as gone.
func (l *Log) Size() (int64, error) {
	l.wmu.Lock()
	padding := int64(l.segs.padding())
	l.wmu.Unlock()
	segs, err := listSegments(l.dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, s := range segs {
		fi, err := statFile(s.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // truncated meanwhile
		case err != nil:
			return 0, fmt.Errorf("wal: stat %s: %w", s.path, err)
		}
		n += fi.Size()
	}
	return max(n-padding, 0), nil
}
