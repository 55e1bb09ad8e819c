package wal

import (
	"runtime"
	"testing"
	"time"
)

// gatherLog opens a log whose first fsync (frame 1) waits for release, and
// whose gather timeouts come from timeouts (recording each wait asked for,
// and checking it is the share of the last commit's duration gather allows).
func gatherLog(t *testing.T, release <-chan struct{}, timeouts chan time.Time, waits *[]time.Duration) *Log {
	t.Helper()
	l, err := Open(t.TempDir(), Options{Logger: quiet, Fault: func(op Op, index uint64) error {
		if op == OpSync && index == 1 {
			<-release
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	l.qmu.Lock()
	l.after = func(d time.Duration) <-chan time.Time {
		*waits = append(*waits, d) // under qmu: gather holds it
		if want := min(l.lastCommit/gatherShare, maxGather); d != want {
			t.Errorf("gather waits %v after a commit of %v, want %v", d, l.lastCommit, want)
		}
		return timeouts
	}
	l.qmu.Unlock()
	t.Cleanup(func() { l.Close() })
	return l
}

// waitUntil yields until cond holds, failing the test after a generous
// deadline rather than hanging when the code under test is wrong.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		runtime.Gosched()
	}
}

func (l *Log) isGathering() bool {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return l.gathering
}

// busyLog makes frame 1 a commit that ends with three appends queued behind
// it (so the log expects four appends at the next commit), and returns the
// three's result channels once frame 1 is durable.
func busyLog(t *testing.T, l *Log, release chan struct{}) []chan uint64 {
	t.Helper()
	first := make(chan uint64)
	go func() { idx, _ := l.Append([][]byte{rec(0)}); first <- idx }()
	for !l.inCommit() {
		runtime.Gosched()
	}
	var results []chan uint64
	for i := 1; i <= 3; i++ {
		c := make(chan uint64, 1)
		results = append(results, c)
		go func() { idx, _ := l.Append([][]byte{rec(i)}); c <- idx }()
	}
	for l.queued() < 3 {
		runtime.Gosched()
	}
	close(release)
	if idx := <-first; idx != 1 {
		t.Fatalf("first append in frame %d, want 1", idx)
	}
	return results
}

// TestIdleLogNeverGathers: one appender at a time commits at once, never
// waiting for others.
func TestIdleLogNeverGathers(t *testing.T) {
	var waits []time.Duration
	release := make(chan struct{})
	close(release)
	l := gatherLog(t, release, make(chan time.Time), &waits)
	for i := 1; i <= 50; i++ {
		idx, err := l.Append([][]byte{rec(i)})
		if err != nil || idx != uint64(i) {
			t.Fatalf("append %d: frame %d, %v", i, idx, err)
		}
	}
	if len(waits) != 0 {
		t.Fatalf("an idle log waited to gather %d times: %v", len(waits), waits)
	}
}

// TestBusyLogGathersTheWokenAppenders: after a commit that ended with four
// appends in flight, the next commit waits until all four are queued again
// (the appender woken by the commit comes back), and writes them as one
// frame with one fsync.
func TestBusyLogGathersTheWokenAppenders(t *testing.T) {
	var waits []time.Duration
	release := make(chan struct{})
	l := gatherLog(t, release, make(chan time.Time), &waits) // the timeout never fires
	results := busyLog(t, l, release)
	waitUntil(t, "the commit gathers", l.isGathering)
	for _, c := range results {
		select {
		case idx := <-c:
			t.Fatalf("an append returned (frame %d) while its commit was gathering", idx)
		default:
		}
	}
	idx, err := l.Append([][]byte{rec(4)}) // the woken appender comes back
	if err != nil || idx != 2 {
		t.Fatalf("returning append: frame %d, %v; want frame 2", idx, err)
	}
	for _, c := range results {
		if got := <-c; got != 2 {
			t.Fatalf("gathered append in frame %d, want 2", got)
		}
	}
	if len(waits) != 1 || waits[0] <= 0 || waits[0] > maxGather {
		t.Fatalf("gather waits %v, want one in (0, %v]", waits, maxGather)
	}
}

// TestGatherGivesUpAtItsTimeout: when the expected appends do not all come
// back, the commit takes what is queued once the wait is over.
func TestGatherGivesUpAtItsTimeout(t *testing.T) {
	var waits []time.Duration
	release := make(chan struct{})
	timeouts := make(chan time.Time, 1)
	l := gatherLog(t, release, timeouts, &waits)
	results := busyLog(t, l, release)
	waitUntil(t, "the commit gathers", l.isGathering)
	timeouts <- time.Now()
	for _, c := range results {
		if got := <-c; got != 2 {
			t.Fatalf("append in frame %d, want 2", got)
		}
	}
	if l.LastIndex() != 2 {
		t.Fatalf("last index %d, want 2", l.LastIndex())
	}
}
