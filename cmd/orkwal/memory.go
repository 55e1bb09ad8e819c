package main

import (
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/orkwal/orkwal/engine"
)

// The daemon's memory policy: once the engine goes quiet after its heap
// grew, the heap's free pages are given back to the OS, so that an idle
// daemon's resident memory follows its live state (what it holds of its
// runs) rather than the collector's headroom (GOGC=100 lets the heap grow
// to twice its live part before a collection, and the pages it used stay
// resident), nor the temporary memory of boot's replay. A busy daemon pays
// nothing: the policy looks only once no loop turn came for settleQuiet.
const (
	// settleQuiet is how long the engine's loop must take no turn before
	// the daemon counts as settled.
	settleQuiet = time.Second
	// settleMinGrowth is the least growth of the heap's resident memory,
	// since the last return (or the least it was since), worth a return;
	// the growth must also be at least an eighth of that level, so that a
	// return's collection, whose cost is the live heap's, is paid once per
	// growth in proportion to it.
	settleMinGrowth = 1 << 20
	// settleFloor: growth counts from this level at least. Below it (the
	// runtime's least heap goal, 4 MiB, which a small daemon never
	// reaches) a return gives back little and its collection's own
	// memory costs more: an idle daemon's RSS was 0.9 MiB higher with a
	// return after boot (BenchmarkDaemonRSS/idle).
	settleFloor = 4 << 20
)

// The policy's counters on /metrics (docs/api.md, Metrics): the quiet
// intervals after commits it looked at (settler.settles), and its returns
// of memory to the OS (settler.returns).
const (
	settlesMetric = "orkwal_memory_settles_total"
	returnsMetric = "orkwal_memory_returns_total"
)

// settler returns the heap's free memory to the OS (free) when the engine
// is quiet after growth. Its seams (the engine's signals, the clock, the
// heap's figure and the return itself) are replaced by tests.
type settler struct {
	changed  func() <-chan struct{}               // closed after the next commit (engine.Changed)
	turns    func() int64                         // loop turns taken so far (engine.Turns)
	after    func(time.Duration) <-chan time.Time // the clock (time.After)
	retained func() uint64                        // the heap's resident bytes (heapRetained)
	free     func()                               // give the free pages back (debug.FreeOSMemory)
	quiet    time.Duration                        // settleQuiet
	settles  atomic.Int64                         // quiet intervals after commits looked at: settlesMetric
	returns  atomic.Int64                         // returns made: returnsMetric
	settled  func()                               // tests only: called after each settle, nil otherwise
}

// newSettler is the daemon's policy over eng.
func newSettler(eng *engine.Engine) *settler {
	return &settler{changed: eng.Changed, turns: eng.Turns, after: time.After,
		retained: heapRetained, free: debug.FreeOSMemory, quiet: settleQuiet}
}

// run applies the policy until done is closed. Boot counts as growth: the
// first quiet after it returns what the replay left (above the floor).
// Idle, it waits on the engine's next commit and wakes for nothing else;
// busy, it reads the turn counter once per quiet interval: its cost never
// grows with the backlog.
func (s *settler) run(done <-chan struct{}) {
	var base uint64 // resident heap after the last return, or the least seen since
	for {
		next := s.changed() // taken first: a commit from now on wakes the wait below
		if !s.waitQuiet(done) {
			return
		}
		base = s.settle(base)
		s.settles.Add(1)
		if s.settled != nil {
			s.settled()
		}
		select {
		case <-done:
			return
		case <-next:
		}
	}
}

// waitQuiet returns once a whole quiet interval passed without a loop
// turn, or false when done is closed first.
func (s *settler) waitQuiet(done <-chan struct{}) bool {
	for {
		t := s.turns()
		select {
		case <-done:
			return false
		case <-s.after(s.quiet):
		}
		if s.turns() == t {
			return true
		}
	}
}

// settle returns the free memory if the resident heap grew enough since
// base (or the floor), and returns the new base.
func (s *settler) settle(base uint64) uint64 {
	r := s.retained()
	if r < max(base, settleFloor)+max(settleMinGrowth, base/8) {
		return min(base, r)
	}
	s.free()
	s.returns.Add(1)
	return s.retained()
}

// heapSamples are the heap's memory backed by physical pages: its objects,
// the unused part of its spans, and its free pages not yet released.
var heapSamples = []string{"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes", "/memory/classes/heap/free:bytes"}

// heapRetained is the heap's resident memory by the runtime's own account
// (runtime/metrics: no stop of the world).
func heapRetained() uint64 {
	samples := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		samples[i].Name = name
	}
	metrics.Read(samples)
	var n uint64
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += s.Value.Uint64()
		}
	}
	return n
}
