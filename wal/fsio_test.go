package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder logs every call through ioHook (fsio.go) and fails the one
// numbered failAt (from 1; 0: none) with errInjected.
type recorder struct {
	mu     sync.Mutex
	calls  []ioCall
	failAt int
}

var errInjected = errors.New("injected I/O failure")

// record sets ioHook to a new recorder until the test ends.
func record(t *testing.T, failAt int) *recorder {
	t.Helper()
	r := &recorder{failAt: failAt}
	ioHook = func(c ioCall) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, c)
		if len(r.calls) == r.failAt {
			return errInjected
		}
		return nil
	}
	t.Cleanup(func() { ioHook = nil })
	return r
}

// log is what was recorded so far.
func (r *recorder) log() []ioCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// notDurable replays calls and returns what a power cut after them could
// lose: a file written or truncated since its last fsync ("file <path>"),
// a folder in which a file was created, removed or renamed since its last
// fsync ("folder <path>"). A new empty file needs only its folder's fsync;
// a removed one none of its own.
func notDurable(calls []ioCall) []string {
	files, dirs := map[string]bool{}, map[string]bool{}
	for _, c := range calls {
		switch c.kind {
		case ioMkdir, ioCreate:
			dirs[filepath.Dir(c.path)] = true
		case ioWrite, ioTruncate:
			files[c.path] = true
		case ioRemove:
			dirs[filepath.Dir(c.path)] = true
			delete(files, c.path)
		case ioRename:
			dirs[filepath.Dir(c.from)], dirs[filepath.Dir(c.path)] = true, true
			if files[c.from] {
				delete(files, c.from)
				files[c.path] = true
			}
		case ioSync:
			delete(files, c.path)
		case ioDirSync:
			delete(dirs, c.path)
		}
	}
	var out []string
	for f := range files {
		out = append(out, "file "+f)
	}
	for d := range dirs {
		out = append(out, "folder "+d)
	}
	slices.Sort(out)
	return out
}

// find is the position in calls of the first call of kind whose path
// satisfies match, from position from on; -1 when there is none.
func find(calls []ioCall, from int, kind ioKind, match func(string) bool) int {
	for i := from; i < len(calls); i++ {
		if calls[i].kind == kind && match(calls[i].path) {
			return i
		}
	}
	return -1
}

func is(path string) func(string) bool { return func(p string) bool { return p == path } }

// anyPath matches every path, for find.
func anyPath(string) bool { return true }

// removalsDurable fails the test unless each removal in calls is preceded
// by the fsync of dir after every earlier folder change (each removal is
// durably done before the next); it returns how many removals there are.
func removalsDurable(t *testing.T, calls []ioCall, dir string) int {
	t.Helper()
	removals := 0
	for i := find(calls, 0, ioRemove, anyPath); i >= 0; i = find(calls, i+1, ioRemove, anyPath) {
		durableAt(t, calls, i, "folder "+dir)
		removals++
	}
	return removals
}

// durableAt fails the test unless path (a file, or a folder's entries, as
// notDurable names them) is durable before calls[at].
func durableAt(t *testing.T, calls []ioCall, at int, what string) {
	t.Helper()
	if at < 0 {
		t.Fatalf("no such call in %v", calls)
	}
	if slices.Contains(notDurable(calls[:at]), what) {
		t.Errorf("%s is not durable before %v; calls:\n%s", what, calls[at], callList(calls))
	}
}

func callList(calls []ioCall) string {
	var b strings.Builder
	for i, c := range calls {
		fmt.Fprintf(&b, "  %2d %v\n", i+1, c)
	}
	return b.String()
}

// recoveryCase is a folder as a crash (or an earlier version) left it,
// which Open repairs: make builds it in dir and returns the records Open
// must serve; check asserts the order of the recovery's calls.
type recoveryCase struct {
	name  string
	make  func(t *testing.T, dir string) [][]byte
	check func(t *testing.T, dir string, calls []ioCall)
}

// recoveryCases cover every change Open makes to a folder.
var recoveryCases = []recoveryCase{
	{name: "new folder", make: func(t *testing.T, dir string) [][]byte {
		os.Remove(dir)
		return nil
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		durableAt(t, calls, find(calls, 0, ioCreate, is(filepath.Join(dir, segmentName(1)))), "folder "+filepath.Dir(dir))
	}},
	{name: "clean", make: func(t *testing.T, dir string) [][]byte {
		return writeRecs(t, dir, 0, 3)
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		// Nothing to repair: the tail and the folder are fsynced all the
		// same, for what a killed process left in the page cache.
		tail := filepath.Join(dir, segmentName(1))
		if find(calls, 0, ioSync, is(tail)) < 0 || find(calls, 0, ioDirSync, is(dir)) < 0 {
			t.Errorf("an Open does not fsync the tail %s and the folder:\n%s", tail, callList(calls))
		}
	}},
	{name: "torn tail", make: func(t *testing.T, dir string) [][]byte {
		recs := writeRecs(t, dir, 0, 3)
		tornFrame(t, dir)
		return recs
	}, check: checkCut},
	{name: "torn tail, old copies pruned", make: func(t *testing.T, dir string) [][]byte {
		recs := writeRecs(t, dir, 0, 3)
		for i := range KeepBroken {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s.broken-%d", segmentName(1), i+1)), []byte{1}, 0o600)
		}
		tornFrame(t, dir)
		return recs
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		checkCut(t, dir, calls)
		if find(calls, 0, ioRemove, func(p string) bool { return strings.HasSuffix(p, ".broken-1") }) < 0 {
			t.Errorf("the oldest copy was not pruned:\n%s", callList(calls))
		}
	}},
	{name: "kept entry restored", make: func(t *testing.T, dir string) [][]byte {
		recs := writeRecs(t, dir, 0, 3)
		seg := filepath.Join(dir, segmentName(1))
		fi, _ := os.Stat(seg)
		if err := os.Truncate(seg, fi.Size()-1); err != nil { // the checksum's last byte past the end
			t.Fatal(err)
		}
		return recs
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		if find(calls, 0, ioWrite, is(filepath.Join(dir, segmentName(1)))) < 0 {
			t.Errorf("the last entry's byte was not written back:\n%s", callList(calls))
		}
	}},
	{name: "earlier version's front truncation", make: func(t *testing.T, dir string) [][]byte {
		recs, _, from := writeLegacy(t, dir, false)
		return recs[from-1:]
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		rename := find(calls, 0, ioRename, anyPath)
		durableAt(t, calls, rename, "folder "+dir) // the superseded segments are gone
		if find(calls, 0, ioRemove, func(p string) bool { return strings.HasSuffix(p, ".TEMP") }) < 0 {
			t.Errorf("the .TEMP file was not removed:\n%s", callList(calls))
		}
	}},
	{name: "no mark", make: func(t *testing.T, dir string) [][]byte {
		recs := writeRecs(t, dir, 0, 3)
		os.Remove(filepath.Join(dir, markName(1)))
		return recs
	}, check: func(t *testing.T, dir string, calls []ioCall) {
		if find(calls, 0, ioCreate, is(filepath.Join(dir, markName(1)))) < 0 {
			t.Errorf("the mark was not made:\n%s", callList(calls))
		}
	}},
}

// writeLegacy writes rec(0..39) to a log in dir (120-byte segments) and
// then what an earlier version's front truncation to the third entry of
// the second segment (from) left when a crash interrupted it: tidwall/wal
// wrote the part of that segment that starts there to "<from>.START",
// which supersedes that segment and those before it, after a
// "<from>.START.TEMP". With corrupt, the .START's second entry (from+1)
// has a byte of its record flipped. It returns the records written, the
// segments and from.
func writeLegacy(t *testing.T, dir string, corrupt bool) ([][]byte, []segmentFile, uint64) {
	t.Helper()
	recs := writeRecs(t, dir, 0, 40)
	segs, _ := listSegments(dir)
	from := segs[1].first + 2
	data, _ := os.ReadFile(segs[1].path)
	off, err := offsetOf(data, segs[1].first, from)
	if err != nil {
		t.Fatal(err)
	}
	data = data[off:]
	if corrupt {
		at, err := offsetOf(data, from, from+1)
		if err != nil {
			t.Fatal(err)
		}
		data[at+8] ^= 0xff
	}
	start := filepath.Join(dir, segmentName(from)+".START")
	os.WriteFile(start, data, 0o600)
	os.WriteFile(start+".TEMP", data[:10], 0o600)
	return recs, segs, from
}

// writeRecs writes rec(from..to-1) to a log in dir, 120-byte segments,
// closes it, and returns the records.
func writeRecs(t *testing.T, dir string, from, to int) [][]byte {
	t.Helper()
	l := openT(t, dir, 120)
	appendRecs(t, l, from, to)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var recs [][]byte
	for i := from; i < to; i++ {
		recs = append(recs, rec(i))
	}
	return recs
}

// tornFrame appends the first bytes of a frame to the tail of dir, as a
// write cut short by a crash leaves them (the file's end).
func tornFrame(t *testing.T, dir string) {
	t.Helper()
	segs, _ := listSegments(dir)
	tail := segs[len(segs)-1]
	f, err := os.OpenFile(tail.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	end := entriesEndOf(t, tail)
	next := byte(len(readAll(t, dir)) + 1) // the index after the last (< 128: one byte)
	if _, err := f.WriteAt([]byte{0x40, Version, next, 1}, end); err != nil {
		t.Fatal(err)
	}
}

// checkCut: the torn tail's copy is fsynced and named durably in the
// folder before the tail is truncated, and the truncation is fsynced once
// (by openSegments; cutTail has no fsync of its own).
func checkCut(t *testing.T, dir string, calls []ioCall) {
	t.Helper()
	cut := find(calls, 0, ioTruncate, func(p string) bool { return filepath.Dir(p) == dir })
	if cut < 0 {
		t.Fatalf("no truncation:\n%s", callList(calls))
	}
	tail := calls[cut].path
	copyAt := find(calls, 0, ioCreate, func(p string) bool { return strings.HasPrefix(p, tail+".broken-") })
	if copyAt < 0 || copyAt > cut {
		t.Fatalf("no copy of the torn tail before the cut:\n%s", callList(calls))
	}
	durableAt(t, calls, cut, "file "+calls[copyAt].path)
	durableAt(t, calls, cut, "folder "+dir)
	syncs := 0
	for _, c := range calls[cut:] {
		if c.kind == ioSync && c.path == tail {
			syncs++
		}
	}
	if syncs != 1 {
		t.Errorf("the cut tail is fsynced %d times after its truncation, want 1:\n%s", syncs, callList(calls))
	}
}

// TestRecoveryMakesEveryChangeDurable: each change Open makes to a folder
// (a torn tail's copy and cut, a kept entry's restored bytes, an earlier
// version's truncation finished, the mark, a new folder and its first
// segment) is followed by the fsync of its file and of its folder before
// Open returns, in the order each case's check names; a clean Open fsyncs
// the tail and the folder too. Removing or moving any of those fsyncs
// fails a case.
func TestRecoveryMakesEveryChangeDurable(t *testing.T) {
	for _, tc := range recoveryCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			want := tc.make(t, dir)
			r := record(t, 0)
			l, err := Open(dir, Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			calls := r.log()
			ioHook = nil
			l.Close()
			if lost := notDurable(calls); len(lost) > 0 {
				t.Errorf("Open returned with %v not durable; calls:\n%s", lost, callList(calls))
			}
			tc.check(t, dir, calls)
			if got := readFrom(t, dir); !equalRecords(got, want) {
				t.Errorf("after the recovery: %d records, want %d", len(got), len(want))
			}
		})
	}
}

// readFrom replays dir from its first index.
func readFrom(t *testing.T, dir string) [][]byte {
	t.Helper()
	out, err := replayAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replayAll is every record of dir, replayed from its first index.
func replayAll(dir string) ([][]byte, error) {
	first, err := FirstIndexDir(dir)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	err = ReplayDir(dir, first, func(_ uint64, rs [][]byte) error {
		for _, r := range rs {
			out = append(out, slices.Clone(r))
		}
		return nil
	})
	return out, err
}

// TestRecoveryFailureIsLoudAndRepeatable: whichever call of a recovery
// fails (every one in turn, in every case), Open fails with an error that
// wraps it, names the file or folder, and, for an fsync, is ErrSync (the
// engine never retries it); the only calls whose failure Open outlives
// are the removals of old copies and temporary files, which it logs. What
// it leaves is repaired by the next Open alike: the same records, and no
// more than KeepBroken torn-tail copies (one more when the removal of one
// failed).
func TestRecoveryFailureIsLoudAndRepeatable(t *testing.T) {
	for _, tc := range recoveryCases {
		t.Run(tc.name, func(t *testing.T) {
			probe := filepath.Join(t.TempDir(), "wal")
			tc.make(t, probe)
			r := record(t, 0)
			l, err := Open(probe, Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			n := len(r.log())
			ioHook = nil
			l.Close()
			for k := 1; k <= n; k++ {
				dir := filepath.Join(t.TempDir(), "wal")
				want := tc.make(t, dir)
				r := record(t, k)
				l, err := Open(dir, Options{Logger: quiet})
				calls := r.log()
				ioHook = nil
				if len(calls) < k {
					t.Fatalf("Open made %d calls, want %d or more (as the probe)", len(calls), k)
				}
				checkFailedOpen(t, calls[k-1], l, err)
				l = openT(t, dir, 120)
				l.Close()
				if got := readFrom(t, dir); !equalRecords(got, want) {
					t.Errorf("call %d (%v) failed, then a reopen: %d records, want %d", k, calls[k-1], len(got), len(want))
				}
				// A copy whose removal failed goes at the next cut.
				if copies, _ := filepath.Glob(filepath.Join(dir, "*.broken-*")); len(copies) > KeepBroken+1 {
					t.Errorf("call %d (%v) failed, then a reopen: %d torn-tail copies", k, calls[k-1], len(copies))
				}
			}
		})
	}
}

// checkFailedOpen checks the outcome of an Open whose call c failed.
func checkFailedOpen(t *testing.T, c ioCall, l *Log, err error) {
	t.Helper()
	if err == nil {
		l.Close()
		if c.kind != ioRemove || !strings.Contains(c.path, ".broken-") && !strings.HasSuffix(c.path, ".TEMP") {
			t.Errorf("Open succeeded though %v failed", c)
		}
		return
	}
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), c.path) {
		t.Errorf("%v failed: Open's error %q does not wrap it or name %s", c, err, c.path)
	}
	if (c.kind == ioSync || c.kind == ioDirSync) && !errors.Is(err, ErrSync) {
		t.Errorf("%v failed: Open's error %q is not ErrSync", c, err)
	}
}

// TestCutTailSyncNamesTheCut: when the fsync that makes a torn tail's cut
// durable fails, Open's error names the segment, the offset of the cut and
// what it was making durable.
func TestCutTailSyncNamesTheCut(t *testing.T) {
	dir := t.TempDir()
	writeRecs(t, dir, 0, 3)
	segs, _ := listSegments(dir)
	tail := segs[len(segs)-1]
	end := entriesEndOf(t, tail)
	tornFrame(t, dir)
	ioHook = func(c ioCall) error {
		if c.kind == ioSync && c.path == tail.path {
			return errInjected
		}
		return nil
	}
	defer func() { ioHook = nil }()
	_, err := Open(dir, Options{Logger: quiet})
	want := fmt.Sprintf("%s at open, making durable the cut of its torn tail at offset %d", tail.path, end)
	if !errors.Is(err, ErrSync) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v, want ErrSync saying %q", err, want)
	}
}

// TestUnpadIsDurable: a tail's padding truncated at Close, and at a roll
// (a folder padded with a larger segment size), is fsynced, and at a roll
// before the next segment is created.
func TestUnpadIsDurable(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, 0) // padded to a padChunk
	appendRecs(t, l, 0, 3)
	r := record(t, 0)
	l.Close()
	calls := r.log()
	tail := filepath.Join(dir, segmentName(1))
	if find(calls, 0, ioTruncate, is(tail)) < 0 || len(notDurable(calls)) > 0 {
		t.Errorf("Close left its padding's truncation not durable:\n%s", callList(calls))
	}
	if err := os.Truncate(tail, 4096); err != nil { // padding a crash left
		t.Fatal(err)
	}
	l = openT(t, dir, 200)
	r = record(t, 0)
	appendRecs(t, l, 3, 30)
	calls = r.log()
	l.Close()
	if i := find(calls, 0, ioTruncate, is(tail)); i < 0 {
		t.Fatalf("the roll did not truncate the padding:\n%s", callList(calls))
	}
	next := find(calls, 0, ioCreate, func(p string) bool { return p != tail && filepath.Dir(p) == dir })
	durableAt(t, calls, next, "file "+tail)
}

// TestCutAtMakesEachStepDurable: the operator's cut makes its copies
// durable (files, their folder, its name) before it removes anything; each
// removal is durable before the next (newest first, so that a crash leaves
// a prefix); the truncation is fsynced before CutAt returns.
func TestCutAtMakesEachStepDurable(t *testing.T) {
	dir, segs := writtenLog(t, 120, 40)
	keep := CutFolder(dir, time.Now())
	r := record(t, 0)
	if err := CutAt(dir, segs[1].first+1, keep, quiet); err != nil {
		t.Fatal(err)
	}
	calls := r.log()
	if lost := notDurable(calls); len(lost) > 0 {
		t.Errorf("CutAt returned with %v not durable:\n%s", lost, callList(calls))
	}
	first := find(calls, 0, ioRemove, anyPath)
	for _, c := range calls[:first] {
		if c.kind == ioCreate {
			durableAt(t, calls, first, "file "+c.path)
		}
	}
	durableAt(t, calls, first, "folder "+keep)
	durableAt(t, calls, first, "folder "+filepath.Dir(keep))
	if removals := removalsDurable(t, calls, dir); removals != len(segs)-2 {
		t.Errorf("%d removals, want %d:\n%s", removals, len(segs)-2, callList(calls))
	}
	if find(calls, first, ioTruncate, is(segs[1].path)) < 0 {
		t.Errorf("no truncation of %s:\n%s", segs[1].path, callList(calls))
	}
}

// TestTruncateFrontRemovalsAreDurableInOrder: each segment TruncateFront
// removes is durably gone before the next is removed, and at its return.
func TestTruncateFrontRemovalsAreDurableInOrder(t *testing.T) {
	dir, segs := writtenLog(t, 120, 40)
	l := openT(t, dir, 120)
	defer l.Close()
	r := record(t, 0)
	if err := l.TruncateFront(segs[3].first); err != nil {
		t.Fatal(err)
	}
	calls := r.log()
	removals := removalsDurable(t, calls, dir)
	if lost := notDurable(calls); removals != 3 || len(lost) > 0 {
		t.Errorf("%d removals, want 3, and %v not durable:\n%s", removals, lost, callList(calls))
	}
}
