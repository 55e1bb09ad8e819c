package main

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDaemon drives a settler: the engine's commits and turns, the
// clock's ticks and the heap's figure are the test's; each return is
// counted. No sleep: the test steps the settler through its waits.
type fakeDaemon struct {
	t        *testing.T
	s        *settler
	mu       sync.Mutex
	commit   chan struct{} // the engine's Changed channel of now
	turns    atomic.Int64
	heap     atomic.Uint64
	waits    chan chan time.Time // each quiet interval the settler waits for
	settled  chan struct{}       // a settle is done
	done     chan struct{}
	finished chan struct{}
}

func newFakeDaemon(t *testing.T, heap uint64) *fakeDaemon {
	f := &fakeDaemon{t: t, commit: make(chan struct{}), waits: make(chan chan time.Time),
		settled: make(chan struct{}), done: make(chan struct{}), finished: make(chan struct{})}
	f.heap.Store(heap)
	f.s = &settler{quiet: time.Second, retained: f.heap.Load, turns: f.turns.Load,
		changed: func() <-chan struct{} { f.mu.Lock(); defer f.mu.Unlock(); return f.commit },
		after: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			f.waits <- ch
			return ch
		},
		free:    func() { f.heap.Store(f.heap.Load() / 2) }, // half the heap was free
		settled: func() { f.settled <- struct{}{} }}
	go func() { f.s.run(f.done); close(f.finished) }()
	t.Cleanup(func() { close(f.done); <-f.finished })
	return f
}

// commitTurn is a loop turn that commits, as the engine's notify.
func (f *fakeDaemon) commitTurn() {
	f.turns.Add(1)
	f.mu.Lock()
	close(f.commit)
	f.commit = make(chan struct{})
	f.mu.Unlock()
}

// busy lets the settler's next quiet interval pass with a loop turn in it.
// A settle instead of that wait (after the interval before) fails the test.
func (f *fakeDaemon) busy() {
	f.t.Helper()
	var ch chan time.Time
	select {
	case ch = <-f.waits:
	case <-f.settled:
		f.t.Fatal("settled after an interval in which the loop turned")
	}
	f.turns.Add(1)
	ch <- time.Now()
}

// quiet lets the settler's next interval pass without a turn, waits for
// its settle, and returns the returns made so far.
func (f *fakeDaemon) quiet() int64 {
	(<-f.waits) <- time.Now()
	<-f.settled
	return f.s.returns.Load()
}

func TestSettlerReturnsOnceAfterGrowthAndQuiet(t *testing.T) {
	f := newFakeDaemon(t, 8<<20)
	if got := f.quiet(); got != 1 { // boot: the replay's memory (4 MiB of 8 free)
		t.Fatalf("returns after boot = %d, want 1", got)
	}
	f.commitTurn()
	f.heap.Add(8 << 20) // 12 MiB: 8 more than after the return
	if got := f.quiet(); got != 2 {
		t.Fatalf("returns after growth and quiet = %d, want 2", got)
	}
	f.commitTurn() // 6 MiB, as after the return
	if got := f.quiet(); got != 2 {
		t.Fatalf("returns after a quiet without growth = %d, want still 2", got)
	}
	f.commitTurn()
	f.heap.Add(settleMinGrowth - 1) // less than the least growth worth a return
	if got := f.quiet(); got != 2 {
		t.Fatalf("returns after growing less than the least = %d, want still 2", got)
	}
	f.commitTurn()
	f.heap.Add(1) // the growth since the last return reaches the least
	if got := f.quiet(); got != 3 {
		t.Fatalf("returns after the growth added up = %d, want 3", got)
	}
}

func TestSettlerNeverReturnsWhileTurnsKeepComing(t *testing.T) {
	f := newFakeDaemon(t, 64<<20)
	for range 20 {
		f.heap.Add(4 << 20)
		f.busy()
		if got := f.s.returns.Load(); got != 0 {
			t.Fatalf("%d returns while the loop turned in every interval", got)
		}
	}
	if got := f.quiet(); got != 1 { // a whole interval without a turn
		t.Fatalf("returns once quiet = %d, want 1", got)
	}
	f.commitTurn()
	for range 5 {
		f.heap.Add(64 << 20)
		f.busy()
	}
	if got := f.s.returns.Load(); got != 1 {
		t.Fatalf("returns while busy again = %d, want still 1", got)
	}
	if got := f.quiet(); got != 2 {
		t.Fatalf("returns once quiet again = %d, want 2", got)
	}
}

func TestSettlerGrowthIsInProportion(t *testing.T) {
	f := newFakeDaemon(t, 512<<20)
	f.quiet() // boot's return: 256 MiB left
	f.commitTurn()
	f.heap.Add(16 << 20) // above the least, below an eighth of 256 MiB
	if got := f.quiet(); got != 1 {
		t.Fatalf("returns = %d after growing 16 MiB over 256: want 1 (the boot's)", got)
	}
	f.commitTurn()
	f.heap.Add(16 << 20) // 32 MiB over 256 in all
	if got := f.quiet(); got != 2 {
		t.Fatalf("returns = %d after growing 32 MiB over 256: want 2", got)
	}
}

func TestHeapRetainedCountsTheHeap(t *testing.T) {
	keep := make([]byte, 8<<20)
	if got := heapRetained(); got < uint64(len(keep)) {
		t.Fatalf("heapRetained = %d with %d bytes live", got, len(keep))
	}
	keep[0] = 1
}

func TestSettlerLeavesASmallHeap(t *testing.T) {
	f := newFakeDaemon(t, 3<<20)
	if got := f.quiet(); got != 0 {
		t.Fatalf("returns after a boot with a 3 MiB heap = %d, want 0 (below the floor)", got)
	}
	f.commitTurn()
	f.heap.Store(settleFloor + settleMinGrowth - 1)
	if got := f.quiet(); got != 0 {
		t.Fatalf("returns with the heap below the floor plus the least growth = %d, want 0", got)
	}
	f.commitTurn()
	f.heap.Add(1)
	if got := f.quiet(); got != 1 {
		t.Fatalf("returns with the heap at the floor plus the least growth = %d, want 1", got)
	}
	if got := f.s.settles.Load(); got != 3 {
		t.Fatalf("settles = %d, want 3", got)
	}
}

// TestDaemonReturnsMemoryWhenSettled: the daemon's policy is wired in:
// /metrics counts the boot's settle (a fresh daemon's heap is below the
// floor: no return), then a return once a run of 20,000 waiting
// instances grew the heap and the loop went quiet.
func TestDaemonReturnsMemoryWhenSettled(t *testing.T) {
	bin := buildBinary(t)
	wfs := t.TempDir()
	if err := os.WriteFile(filepath.Join(wfs, "wide.yaml"),
		[]byte("name: wide\ntasks:\n  t: {command: [\"true\"], delay: 1h, parallel: 20000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemonOn(t, bin, filepath.Join(t.TempDir(), "data"), freeAddr(t), wfs)
	counter := func(name string) float64 {
		_, body := d.call("GET", "/metrics", "")
		v, _ := metricValue(body, name)
		return v
	}
	d.eventually("the boot's settle", func() bool { return counter(settlesMetric) >= 1 })
	if got := counter(returnsMetric); got != 0 {
		t.Fatalf("returns after an empty boot = %v, want 0", got)
	}
	d.trigger("wide")
	d.eventually("a return once the run's instances were created", func() bool { return counter(returnsMetric) >= 1 })
}

// TestSettlerIdleWaitsOnTheCommitAlone: once settled, with no commit, the
// settler waits on the engine's commit signal and on nothing else: it arms
// no timer, reads no turn count and no heap figure (run's doc: idle it
// "wakes for nothing else"). Every seam call is reported to the test and
// waits there until the test takes it, and the commit is sent on the
// channel the settler waits on (not closed), so the send completes only
// once the settler waits on it: a call made while idle is seen before the
// commit is taken, whatever the scheduling, with no timeout to wait out.
// A settler that polls while idle (waitQuiet looping with a timer, or run
// going back to it without waiting for the commit) fails it at once.
func TestSettlerIdleWaitsOnTheCommitAlone(t *testing.T) {
	var mu sync.Mutex
	commit := make(chan struct{}) // the engine's Changed channel of now
	calls, done, finished := make(chan string), make(chan struct{}), make(chan struct{})
	report := func(call string) { // a seam call, taken by the test
		select {
		case calls <- call:
		case <-done:
		}
	}
	s := &settler{quiet: time.Second,
		changed: func() <-chan struct{} { report("changed"); mu.Lock(); defer mu.Unlock(); return commit },
		turns:   func() int64 { report("turns"); return 0 }, // no turn: every interval is quiet
		after: func(time.Duration) <-chan time.Time {
			report("after")
			tick := make(chan time.Time, 1)
			tick <- time.Now() // the interval is over at once
			return tick
		},
		retained: func() uint64 { report("retained"); return 0 }, // below the floor: no return
		free:     func() { report("free") },
		settled:  func() { report("settled") }}
	go func() { s.run(done); close(finished) }()
	t.Cleanup(func() { close(done); <-finished })
	settle := []string{"changed", "turns", "after", "turns", "retained", "settled"}
	for round := range 3 { // the boot's settle, then one after each commit
		for _, want := range settle {
			if got := <-calls; got != want {
				t.Fatalf("settle %d: the settler called %s, want %s (a settle is %v)", round, got, want, settle)
			}
		}
		mu.Lock()
		next := commit
		commit = make(chan struct{})
		mu.Unlock()
		select {
		case next <- struct{}{}: // taken where the settler waits for the commit: a commit
		case got := <-calls:
			t.Fatalf("settled, with no commit, the settler called %s: it should only wait for the commit", got)
		}
	}
}
