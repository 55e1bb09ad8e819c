package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openT(t *testing.T, dir string, seg int) *Log {
	t.Helper()
	l, err := Open(dir, Options{SegmentSize: seg, Logger: quiet})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func rec(i int) []byte { return []byte(fmt.Sprintf("record-%04d", i)) }

// readAll replays dir and returns every record in order.
func readAll(t *testing.T, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	err := ReplayDir(dir, 1, func(_ uint64, rs [][]byte) error {
		for _, r := range rs {
			out = append(out, append([]byte(nil), r...))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return out
}

func TestAppendReplayAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 256)
	var want [][]byte
	for i := 0; i < 200; i++ {
		batch := [][]byte{rec(2 * i), rec(2*i + 1)}
		idx, err := l.Append(batch)
		if err != nil {
			t.Fatal(err)
		}
		if idx != uint64(i+1) {
			t.Fatalf("index %d, want %d", idx, i+1)
		}
		want = append(want, batch...)
	}
	l.Close()
	segs, _ := listSegments(dir)
	if len(segs) < 10 {
		t.Fatalf("want many segments with a 256-byte size, got %d", len(segs))
	}
	l = openT(t, dir, 256)
	defer l.Close()
	if l.LastIndex() != 200 {
		t.Fatalf("last index after reopen %d", l.LastIndex())
	}
	if got := readAll(t, dir); !equalRecords(got, want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
}

// TestSegmentStartsWhenTailFull: a write to a tail segment of SegmentSize
// bytes or more starts a new segment file, and exactly those writes fsync
// the folder (the new name must be durable before the append returns).
func TestSegmentStartsWhenTailFull(t *testing.T) {
	dir := t.TempDir()
	var dirSyncs atomic.Int64
	l, err := Open(dir, Options{SegmentSize: 300, Logger: quiet, Fault: func(op Op, _ uint64) error {
		if op == OpDirSync {
			dirSyncs.Add(1)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	created := 0
	for i := 0; i < 300; i++ {
		segs, _ := listSegments(dir)
		tail := entriesEndOf(t, segs[len(segs)-1])
		full := tail >= 300
		syncs := dirSyncs.Load()
		if _, err := l.Append([][]byte{bytes.Repeat([]byte{'x'}, rand.Intn(120)+1)}); err != nil {
			t.Fatal(err)
		}
		after, _ := listSegments(dir)
		started := len(after) > len(segs)
		if started != full || (dirSyncs.Load() > syncs) != full {
			t.Fatalf("append %d to a tail of %d bytes: new segment %v, folder fsynced %v", i, tail, started, dirSyncs.Load() > syncs)
		}
		if started {
			created++
			if last := after[len(after)-1].first; last != l.LastIndex() {
				t.Fatalf("new segment named %d, holding index %d", last, l.LastIndex())
			}
		}
	}
	if created < 10 {
		t.Fatalf("only %d segments created", created)
	}
}

func TestGroupCommitConcurrentAppenders(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := l.Append([][]byte{[]byte(fmt.Sprintf("w%d-%d", w, i))}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	l.Close()
	got := readAll(t, dir)
	if len(got) != workers*each {
		t.Fatalf("got %d records, want %d", len(got), workers*each)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if seen[string(r)] {
			t.Fatalf("record %s twice", r)
		}
		seen[string(r)] = true
	}
	if last := l.last; last > workers*each {
		t.Fatalf("more frames (%d) than appends", last)
	}
}

func TestAppendAfterPoisonFails(t *testing.T) {
	l := openT(t, t.TempDir(), 0)
	defer l.Close()
	l.fail(errors.New("injected fsync failure"))
	if _, err := l.Append([][]byte{rec(1)}); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append after poison: %v, want ErrPoisoned", err)
	}
}

func equalRecords(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// garbage kinds appended after a cut.
// entriesEndOf is where the entries of segment s end (its size less its
// zero padding); the segment must scan cleanly.
func entriesEndOf(t *testing.T, s segmentFile) int64 {
	t.Helper()
	data, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	if err := scanSegment(s.path, data, s.first, func(e entry) error { end = e.offset + e.size; return nil }); err != nil {
		t.Fatal(err)
	}
	return end
}

var garbage = map[string][]byte{
	"nothing": nil,
	"zeros":   make([]byte, 64),
	"random":  []byte("\x8f\x13\xa0\x07\xff\x01\x02zz\x9a\xbb\xcc\x10\x00\x7f\x05"),
	"prefix":  {0x7f}, // a length prefix promising 127 bytes that never came
}

// TestTornTailEveryOffset writes a small log, then for every byte offset
// inside its last three frames cuts the segment there, appends each kind of
// garbage, and reopens. A file that ends there (a write whose end never
// reached the disk), or a new entry's first bytes at the end of the file,
// is a torn write: the log must hold exactly the frames that were whole, and
// accept appends afterwards. Other bytes after a cut inside a frame are
// written sectors that disagree with it: refused (see TestTailFlipEveryByte)
// with the position of the first bad frame, or, when a torn write could
// leave them, cut the same way. A frame missing only its checksum's last
// bytes is whole, and kept.
func TestTornTailEveryOffset(t *testing.T) {
	src := t.TempDir()
	l := openT(t, src, 0)
	var ends []int64 // byte offset where each frame ends
	var frames [][][]byte
	for i := 0; i < 6; i++ {
		batch := [][]byte{rec(i), bytes.Repeat([]byte{byte('a' + i)}, i*7)}
		if _, err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, batch)
		ends = append(ends, entriesEndOf(t, segmentFile{path: filepath.Join(src, "00000000000000000001"), first: 1}))
	}
	l.Close()
	whole, _ := os.ReadFile(filepath.Join(src, "00000000000000000001"))
	for cut := ends[2]; cut <= ends[5]; cut++ {
		for kind, junk := range garbage {
			dir := t.TempDir()
			seg := filepath.Join(dir, "00000000000000000001")
			os.WriteFile(seg, append(append([]byte(nil), whole[:cut]...), junk...), 0o644)
			n := 0
			for n < len(ends) && ends[n] <= cut {
				n++
			}
			l, err := Open(dir, Options{Logger: quiet})
			mustOpen := junk == nil || cut == ends[n-1] && kind != "random"
			var ce *CorruptError
			if err != nil && !mustOpen && errors.As(err, &ce) && ce.Offset == ends[n-1] {
				continue // refused, naming the first bad frame
			}
			if err != nil {
				t.Fatalf("cut %d + %s: open: %v", cut, kind, err)
			}
			// A frame whose missing bytes are only the last of its
			// checksum (at least minChecksumKnown of them written) is
			// whole: restored and kept (TestTailLastChecksumBytesRestored),
			// when what follows the cut is zeros or the frame's own bytes.
			restored := n < len(ends) && ends[n]-cut <= checksumSize-minChecksumKnown &&
				(allZero(junk) || bytes.HasPrefix(whole[cut:], junk))
			if restored {
				n++
			}
			var want [][]byte
			for _, f := range frames[:n] {
				want = append(want, f...)
			}
			if got := readAll(t, dir); !equalRecords(got, want) {
				t.Fatalf("cut %d + %s: got %d records, want %d", cut, kind, len(got), len(want))
			}
			if _, err := l.Append([][]byte{[]byte("after")}); err != nil {
				t.Fatalf("cut %d + %s: append after repair: %v", cut, kind, err)
			}
			l.Close()
			if got := readAll(t, dir); len(got) != len(want)+1 {
				t.Fatalf("cut %d + %s: append after repair not readable", cut, kind)
			}
			cutNothing := restored || cut == ends[n-1] && allZero(junk) // nothing, or padding
			if broken, _ := filepath.Glob(seg + ".broken-*"); len(broken) == 0 && !cutNothing {
				t.Fatalf("cut %d + %s: no .broken copy kept", cut, kind)
			}
		}
	}
}

// TestCorruptionIsLoud flips a byte in a frame that is followed by valid
// frames (in the last segment and in an earlier one): Open or Replay must
// fail with the segment, offset and index, never cut or skip.
func TestCorruptionIsLoud(t *testing.T) {
	for _, tc := range []struct {
		name    string
		segSize int
	}{{"last segment", 0}, {"earlier segment", 200}} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writtenLog(t, tc.segSize, 40)
			first := filepath.Join(dir, "00000000000000000001")
			data, _ := os.ReadFile(first)
			data[len(rec(0))/2+4] ^= 0xff // inside frame 1's record
			os.WriteFile(first, data, 0o644)
			err := openAndReplay(dir)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Index != 1 || ce.Offset != 0 || ce.Segment != first {
				t.Fatalf("got %v, want a CorruptError at %s offset 0 index 1", err, first)
			}
			if after, _ := os.ReadFile(first); !bytes.Equal(after, data) {
				t.Fatal("corrupt segment was modified")
			}
		})
	}
}

func openAndReplay(dir string) error {
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Replay(1, func(uint64, [][]byte) error { return nil })
}

func TestMissingSegmentIsLoud(t *testing.T) {
	dir, segs := writtenLog(t, 100, 60)
	if len(segs) < 4 {
		t.Fatalf("need several segments, got %d", len(segs))
	}
	os.Remove(segs[1].path)
	err := openAndReplay(dir)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Segment != segs[2].path || ce.Index != segs[1].first {
		t.Fatalf("got %v, want a gap reported at %s index %d", err, segs[2].path, segs[1].first)
	}
}

func TestLockOneWriter(t *testing.T) {
	dir := t.TempDir()
	a, err := AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(dir)
	want := fmt.Sprintf("data folder %s is in use by pid %d", dir, os.Getpid())
	if !errors.Is(err, ErrLocked) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
		t.Fatalf("second lock: %v, want %q", err, want)
	}
	a.Release()
	b, err := AcquireLock(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	b.Release()
}

// TestFailStopNeverRetriesFsync: after an injected fsync failure every
// append fails, and no later write or fsync is even attempted.
func TestFailStopNeverRetriesFsync(t *testing.T) {
	dir := t.TempDir()
	var calls []Op
	boom := errors.New("injected EIO")
	l, err := Open(dir, Options{Logger: quiet, Fault: func(op Op, index uint64) error {
		calls = append(calls, op)
		if op == OpSync && index == 3 {
			return boom
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendRecs(t, l, 1, 3)
	if _, err := l.Append([][]byte{rec(3)}); !errors.Is(err, ErrPoisoned) {
		t.Fatalf("append with a failing fsync: %v, want ErrPoisoned", err)
	}
	n := len(calls)
	for i := 0; i < 3; i++ {
		if _, err := l.Append([][]byte{rec(9)}); !errors.Is(err, ErrPoisoned) || !strings.Contains(err.Error(), "injected EIO") {
			t.Fatalf("append after poison: %v, want ErrPoisoned naming the cause", err)
		}
	}
	if len(calls) != n {
		t.Fatalf("a poisoned log attempted I/O again: %v", calls[n:])
	}
	if l.LastIndex() != 2 || !errors.Is(l.Err(), boom) {
		t.Fatalf("last durable index %d, err %v", l.LastIndex(), l.Err())
	}
}

// TestDirSyncFailureAfterSegmentCreateIsFatal: the folder fsync after a new
// segment is part of the commit.
func TestDirSyncFailureAfterSegmentCreateIsFatal(t *testing.T) {
	var failed bool
	l, err := Open(t.TempDir(), Options{Logger: quiet, SegmentSize: 64, Fault: func(op Op, index uint64) error {
		if op == OpDirSync {
			failed = true
			return errors.New("injected dirsync failure")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var appendErr error
	for i := 0; i < 10 && appendErr == nil; i++ {
		_, appendErr = l.Append([][]byte{bytes.Repeat([]byte{'x'}, 40)})
	}
	if !failed || !errors.Is(appendErr, ErrPoisoned) {
		t.Fatalf("dir fsync failed=%v, append err %v; want the append to fail", failed, appendErr)
	}
}

// TestGroupCommitBatchesWaitingAppenders: while one commit's fsync is in
// progress, appenders queue; the next commit writes all of them as one frame
// with one fsync, and each returns only after it.
func TestGroupCommitBatchesWaitingAppenders(t *testing.T) {
	release := make(chan struct{})
	var syncs atomic.Int32
	l, err := Open(t.TempDir(), Options{Logger: quiet, Fault: func(op Op, index uint64) error {
		if op == OpSync {
			syncs.Add(1)
			if index == 1 {
				<-release // a slow disk
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := make(chan uint64)
	go func() { idx, _ := l.Append([][]byte{rec(0)}); first <- idx }()
	const waiting = 10
	results := make(chan uint64, waiting)
	for !l.inCommit() {
		runtime.Gosched()
	}
	for i := 1; i <= waiting; i++ {
		go func(i int) { idx, _ := l.Append([][]byte{rec(i)}); results <- idx }(i)
	}
	for l.queued() < waiting {
		runtime.Gosched()
	}
	select {
	case <-results:
		t.Fatal("an appender returned before its record was durable")
	default:
	}
	close(release)
	if idx := <-first; idx != 1 {
		t.Fatalf("first append index %d", idx)
	}
	for i := 0; i < waiting; i++ {
		if idx := <-results; idx != 2 {
			t.Fatalf("queued append landed in frame %d, want all in frame 2", idx)
		}
	}
	if n := syncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 11 appends, want 2", n)
	}
}

// TestTruncateFrontRemovesWholeSegments: TruncateFront(31) removes every
// segment whose entries all come before 31 and keeps the one holding 31
// whole, so the log starts at or a little before 31, at a segment boundary;
// appends go on, and a reopen sees the same log.
func TestTruncateFrontRemovesWholeSegments(t *testing.T) {
	for _, seg := range []int{0, 200} { // 31 in the only segment, and past several
		dir := t.TempDir()
		l := openT(t, dir, seg)
		appendRecs(t, l, 0, 50)
		before, _ := listSegments(dir)
		if err := l.TruncateFront(31); err != nil {
			t.Fatal(err)
		}
		first, _ := l.FirstIndex()
		after, _ := listSegments(dir)
		if first > 31 || after[0].first != first {
			t.Fatalf("segment size %d: first index %d, first segment %d, want the segment holding 31", seg, first, after[0].first)
		}
		if len(after) > 1 && after[1].first <= 31 {
			t.Fatalf("segment size %d: segment %d, all before 31, kept", seg, after[0].first)
		}
		if seg > 0 && (first == 1 || len(after) == len(before)) {
			t.Fatalf("segment size %d: nothing removed (%d segments, first %d)", seg, len(after), first)
		}
		appendRecs(t, l, 50, 120)
		l.Close()
		var got []string
		if err := ReplayDir(dir, 31, func(_ uint64, rs [][]byte) error {
			got = append(got, string(rs[0]))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 90 || got[0] != string(rec(30)) || got[89] != string(rec(119)) {
			t.Fatalf("segment size %d: after truncation %d records from %s", seg, len(got), got[0])
		}
		if err := ReplayDir(dir, 1, func(uint64, [][]byte) error { return nil }); (first > 1) != errors.Is(err, ErrCorrupt) {
			t.Fatalf("segment size %d: replay from 1 with the log starting at %d: %v", seg, first, err)
		}
		l = openT(t, dir, seg)
		if f, _ := l.FirstIndex(); f != first || l.LastIndex() != 120 {
			t.Fatalf("segment size %d: reopened at %d..%d, want %d..120", seg, f, l.LastIndex(), first)
		}
		l.Close()
	}
}

// TestLegacyInterruptedTruncationRecovers: versions built on tidwall/wal
// truncated by writing a .START segment, removing the old ones, and
// renaming it. A crash after the .START was written left both; Open
// finishes it, to the truncated log.
func TestLegacyInterruptedTruncationRecovers(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	appendRecs(t, l, 0, 20)
	l.Close()
	seg := filepath.Join(dir, "00000000000000000001")
	data, _ := os.ReadFile(seg)
	off, err := offsetOf(data, 1, 11)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000011.START"), data[off:], 0o644)
	l = openT(t, dir, 0)
	defer l.Close()
	if first, _ := l.FirstIndex(); first != 11 || l.LastIndex() != 20 {
		t.Fatalf("after a crash mid-truncate: first %d last %d, want 11..20", first, l.LastIndex())
	}
	if _, err := os.Stat(seg); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the segment the truncation replaced is still there: %v", err)
	}
}

// TestEndFileRefused: an ".END" file (tidwall/wal's back truncation) is
// written by no version of orkwal: Open refuses the folder, naming it.
func TestEndFileRefused(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	l.Append([][]byte{rec(1)})
	l.Close()
	end := filepath.Join(dir, "00000000000000000001.END")
	os.WriteFile(end, nil, 0o644)
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), end) {
		t.Fatalf("open with an .END file: %v, want corruption naming %s", err, end)
	}
}

// TestLockWaitsForAHolderWhoseRecordedPidIsDead: after a kill -9, a child
// the daemon was forking can hold the lock's descriptor for milliseconds;
// a restart waits for it instead of refusing.
func TestLockWaitsForAHolderWhoseRecordedPidIsDead(t *testing.T) {
	dir := t.TempDir()
	a, err := AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	dead.Run() // a pid that is now gone
	os.WriteFile(filepath.Join(dir, LockFileName), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644)
	released := make(chan struct{})
	go func() { time.Sleep(50 * time.Millisecond); a.Release(); close(released) }()
	b, err := AcquireLock(dir)
	if err != nil {
		t.Fatalf("lock held under a dead pid: %v, want a wait then success", err)
	}
	<-released
	b.Release()
}

// TestCloseWaitsForATruncation: TruncateFront removes files without the
// write lock; Close must not return while it does (the engine's disk-full
// recovery closes and reopens the log in-process: a removal still going on
// would then look like a gap, corruption). Events are recorded in order;
// no removal may follow Close's return.
func TestCloseWaitsForATruncation(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 64)
	appendRecs(t, l, 0, 200)
	var mu sync.Mutex
	var events []string
	note := func(e string) { mu.Lock(); events = append(events, e); mu.Unlock() }
	inRemoval, proceed := make(chan struct{}), make(chan struct{})
	first := true
	l.removing = func(path string) {
		note("remove " + filepath.Base(path))
		if first {
			first = false
			close(inRemoval)
			<-proceed
		}
	}
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateFront(190) }()
	<-inRemoval
	closed := make(chan error, 1)
	go func() { err := l.Close(); note("close returned"); closed <- err }()
	<-l.stopped // Close is past its committer: next it takes the locks
	close(proceed)
	if err := <-truncated; err != nil {
		t.Fatalf("truncate: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if len(events) < 3 || events[len(events)-1] != "close returned" {
		t.Fatalf("events %v: a removal came after Close returned", events)
	}
	l = openT(t, dir, 64)
	defer l.Close()
	f, _ := l.FirstIndex()
	if err := l.Replay(f, func(uint64, [][]byte) error { return nil }); err != nil || f == 1 {
		t.Fatalf("after the truncation and a reopen: first %d, replay %v", f, err)
	}
}

// TestOpenFsyncsTailAndFolder: a process killed before its own fsyncs can
// leave a frame only in the page cache, or a segment whose name is not
// durable; Open fsyncs the tail segment and the folder before it accepts
// appends (through its fault point: an fsync that fails makes Open fail).
func TestOpenFsyncsTailAndFolder(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	l.Append([][]byte{rec(1)})
	l.Close()
	var ops []Op
	l, err := Open(dir, Options{Logger: quiet, Fault: func(op Op, index uint64) error {
		ops = append(ops, op)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if len(ops) != 1 || ops[0] != OpOpenSync {
		t.Fatalf("fault points of an Open: %v, want [%s]", ops, OpOpenSync)
	}
	boom := errors.New("injected")
	if _, err := Open(dir, Options{Logger: quiet, Fault: func(op Op, _ uint64) error {
		if op == OpOpenSync {
			return boom
		}
		return nil
	}}); !errors.Is(err, ErrSync) || !errors.Is(err, boom) {
		t.Fatalf("open whose fsync fails: %v, want ErrSync wrapping it", err)
	}
}

// TestAppendAllocatesNothing: an Append on an idle log allocates nothing of
// its own once warm (requests are pooled, buffers reused): at hundreds of
// thousands of appends a second, an allocation per call fed the garbage
// collector enough to show in the p99.9.
func TestAppendAllocatesNothing(t *testing.T) {
	l := openT(t, t.TempDir(), 0)
	defer l.Close()
	recs := [][]byte{rec(1)}
	l.Append(recs)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(recs); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Fatalf("%.1f allocations per Append, want 0", n)
	}
}

// TestTruncateFrontRemovesOldestFirst: what a crash keeps of a truncation
// is a prefix of its removals only if they are made oldest first (each is
// fsynced before the next); and a log whose oldest segments are gone, the
// rest whole, opens at the first remaining one with every later frame.
func TestTruncateFrontRemovesOldestFirst(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 64)
	appendRecs(t, l, 0, 60)
	var removed []string
	l.removing = func(path string) { removed = append(removed, filepath.Base(path)) }
	if err := l.TruncateFront(40); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if len(removed) < 3 || !slices.IsSorted(removed) {
		t.Fatalf("removals %v, want several, oldest first", removed)
	}

	// A crash after the first removal of another truncation.
	segs, _ := listSegments(dir)
	if len(segs) < 2 {
		t.Fatalf("%d segments left, want at least 2", len(segs))
	}
	os.Remove(segs[0].path)
	l = openT(t, dir, 64)
	defer l.Close()
	if f, _ := l.FirstIndex(); f != segs[1].first || l.LastIndex() != 60 {
		t.Fatalf("after a partial truncation: %d..%d, want %d..60", f, l.LastIndex(), segs[1].first)
	}
	n := 0
	if err := l.Replay(segs[1].first, func(uint64, [][]byte) error { n++; return nil }); err != nil || n != int(61-segs[1].first) {
		t.Fatalf("replay after a partial truncation: %d frames, %v", n, err)
	}
}

// appendRecs appends rec(i) for i in [from, to), one frame each.
// writtenLog writes records 0..n-1 to a new log of segment size seg (0:
// the default), one frame each, closes it and returns its folder and its
// segments.
func writtenLog(t *testing.T, seg, n int) (string, []segmentFile) {
	t.Helper()
	dir := t.TempDir()
	l := openT(t, dir, seg)
	appendRecs(t, l, 0, n)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, segs
}

func appendRecs(t *testing.T, l *Log, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := l.Append([][]byte{rec(i)}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// TestEntrySize: an append, alone in its frame, grows Size by exactly
// EntrySize, for records of every length class of the uvarints involved.
func TestEntrySize(t *testing.T) {
	t.Parallel()
	l := openT(t, t.TempDir(), 1<<20)
	defer l.Close()
	for _, recs := range [][][]byte{
		{{1}},
		{make([]byte, 127), make([]byte, 128)},
		{make([]byte, 20000)},
		{{1}, {2}, {3}, make([]byte, 300)},
	} {
		before, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		index, err := l.Append(recs)
		if err != nil {
			t.Fatal(err)
		}
		after, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := EntrySize(index, recs), after-before; got != want {
			t.Errorf("%d records at %d: EntrySize %d, Size grew by %d", len(recs), index, got, want)
		}
	}
}

// TestFailedWriteIsTakenBack: an append whose write fails, after handing
// all of its frame to the file (OpWrite) or none of it, leaves no trace a
// reopen would replay or cut as a torn tail: in the tail segment, and when
// the failed frame was the first of a new segment. The entries before it
// are intact, and the reopened log appends at the failed index.
func TestFailedWriteIsTakenBack(t *testing.T) {
	for _, tt := range []struct {
		name    string
		segment int
	}{
		{"in the tail", 1 << 20},
		{"first of a new segment", 40}, // two entries fill a segment
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			full := errors.New("injected: no space left on device")
			l := openT(t, dir, tt.segment)
			appendRecs(t, l, 0, 2)
			var synced []int64 // the tail's size at each fsync after the failed write
			failed := false
			ioHook = func(c ioCall) error {
				switch {
				case c.kind == ioStep && c.op == OpWrite && c.index == 3 && !failed:
					failed = true
					return full
				case c.kind == ioDataSync && failed:
					fi, err := os.Stat(c.path)
					if err != nil {
						return err
					}
					synced = append(synced, fi.Size())
				}
				return nil
			}
			defer func() { ioHook = nil }()
			if _, err := l.Append([][]byte{rec(2)}); !errors.Is(err, full) || errors.Is(err, ErrSync) {
				t.Fatalf("append at the failing write: %v, want the injected error, not an fsync's", err)
			}
			if want := l.segs.start; len(synced) != 1 || synced[0] != int64(want) {
				t.Fatalf("take-back fsyncs saw the tail at sizes %v, want one at %d, where the write began: a crash could bring the entry back", synced, want)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openT(t, dir, tt.segment)
			defer l.Close()
			if l.LastIndex() != 2 || l.CutBytes() != 0 {
				t.Fatalf("reopened: last index %d, %d torn bytes cut; want 2 and none", l.LastIndex(), l.CutBytes())
			}
			if broken, _ := filepath.Glob(filepath.Join(dir, "*.broken-*")); len(broken) > 0 {
				t.Fatalf("reopen kept a copy of a torn tail: %v", broken)
			}
			if i, err := l.Append([][]byte{rec(7)}); i != 3 || err != nil {
				t.Fatalf("append after reopen: index %d, %v; want 3", i, err)
			}
			got := readAll(t, dir)
			want := [][]byte{rec(0), rec(1), rec(7)}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("log holds %q, want %q", got, want)
			}
		})
	}
}

// TestFailedTakeBackIsAnFsyncFailure: when the fsync of a failed write's
// take-back fails, what the disk holds is not known: the append fails
// with ErrSync, which the engine never retries as a full disk.
func TestFailedTakeBackIsAnFsyncFailure(t *testing.T) {
	full := errors.New("injected: no space left on device")
	l := openT(t, t.TempDir(), 0)
	defer l.Close()
	appendRecs(t, l, 0, 1)
	failed := false
	ioHook = func(c ioCall) error {
		switch {
		case c.kind == ioStep && c.op == OpWrite && c.index == 2:
			failed = true
			return full
		case c.kind == ioDataSync && failed:
			return errors.New("injected: fsync failed")
		}
		return nil
	}
	defer func() { ioHook = nil }()
	if _, err := l.Append([][]byte{rec(1)}); !errors.Is(err, ErrSync) || !errors.Is(err, full) {
		t.Fatalf("append whose take-back fsync failed: %v, want ErrSync wrapping the write's error", err)
	}
}

// The frame buffer of a burst is let go once a frame uses less than a
// quarter of it, and a steady frame size keeps its buffer; every record
// reads back either way.
func TestBurstFrameBufferLetGo(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0)
	defer l.Close()
	big := [][]byte{bytes.Repeat([]byte{'b'}, 4*maxKeptBuf)}
	small := [][]byte{rec(1)}
	bufCap := func(records [][]byte) int {
		t.Helper()
		if _, err := l.Append(records); err != nil {
			t.Fatal(err)
		}
		l.wmu.Lock()
		defer l.wmu.Unlock()
		return cap(l.buf)
	}
	for i, step := range []struct {
		records  [][]byte
		min, max int
	}{
		{big, 4 * maxKeptBuf, 1 << 30}, // a burst: kept while frames are as big
		{big, 4 * maxKeptBuf, 1 << 30},
		{small, 0, 0},          // the first small frame after it lets it go
		{small, 1, maxKeptBuf}, // a small one is kept
		{small, 1, maxKeptBuf},
	} {
		if c := bufCap(step.records); c < step.min || c > step.max {
			t.Errorf("append %d: a buffer of %d bytes kept, want %d to %d", i, c, step.min, step.max)
		}
	}
	if got := readAll(t, dir); len(got) != 5 || !bytes.Equal(got[1], big[0]) || !bytes.Equal(got[4], small[0]) {
		t.Errorf("read back %d records", len(got))
	}
}
