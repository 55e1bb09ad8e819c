// Package benchtest holds what the tests and benchmarks of every package
// (wal, executors, engine, api, cmd/orkwal) measure with: the CPU time of
// the process, of its calling thread and of the children it has reaped; a
// run's wall and CPU cost; the floor a bare Go program sets (spawns of
// `true`, fsyncs of a plain file); nearest-rank percentiles. CPU time is
// the figure that holds on a shared, noisy machine: it shows what the code
// costs apart from waiting for a core.
//
// Benchmarks and tests only (no package's own code imports it:
// TestImportsFollowTheTable); it imports nothing of orkwal, so that wal's
// tests may use it too. Linux: the thread's CPU time is
// CLOCK_THREAD_CPUTIME_ID's.
package benchtest

import (
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SelfCPU is the process's user and system CPU time, its children's
// excluded.
func SelfCPU() time.Duration { return rusage(unix.RUSAGE_SELF) }

// ChildCPU is the user and system CPU time of the children the process
// has waited for.
func ChildCPU() time.Duration { return rusage(unix.RUSAGE_CHILDREN) }

func rusage(who int) time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(who, &ru) // cannot fail for SELF and CHILDREN
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ThreadCPU is the calling thread's CPU time, to the nanosecond: lock the
// goroutine to its thread (runtime.LockOSThread) around what it times.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) // cannot fail for this clock
	return time.Duration(ts.Nano())
}

// Cost is what some work took: wall-clock time, the process's own CPU
// time, and that of the children it reaped meanwhile.
type Cost struct {
	Wall, Self, Children time.Duration
}

// Add adds o to c.
func (c *Cost) Add(o Cost) {
	c.Wall += o.Wall
	c.Self += o.Self
	c.Children += o.Children
}

// Measure runs f and returns what it took.
func Measure(f func()) Cost {
	self0, child0 := SelfCPU(), ChildCPU()
	start := time.Now()
	f()
	return Cost{time.Since(start), SelfCPU() - self0, ChildCPU() - child0}
}

// BareSpawns runs `true` n times from `workers` goroutines, as a minimal
// Go program would (exec.Command("true").Run()), and returns what it took;
// Children is the CPU time of those n processes alone (their own
// ProcessState), whatever else the process reaps meanwhile.
func BareSpawns(tb testing.TB, n, workers int) Cost {
	tb.Helper()
	var next, children atomic.Int64
	var wg sync.WaitGroup
	self0, start := SelfCPU(), time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				cmd := exec.Command("true")
				if err := cmd.Run(); err != nil {
					tb.Error(err)
					return
				}
				children.Add(int64(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()))
			}
		})
	}
	wg.Wait()
	return Cost{Wall: time.Since(start), Self: SelfCPU() - self0, Children: time.Duration(children.Load())}
}

// FsyncCost appends 144 bytes (a record and about a frame's overhead) to a
// new file in dir and fsyncs it, n times, and returns the mean wall time
// and the calling thread's CPU time of one write and fsync, the way the
// WAL benchmarks' raw baseline does. The file is created before the clock
// starts and removed at the end.
func FsyncCost(tb testing.TB, dir string, n int) (wall, cpu time.Duration) {
	tb.Helper()
	file, err := os.CreateTemp(dir, "fsync-baseline-")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(file.Name())
	defer file.Close()
	rec := make([]byte, 144)
	runtime.LockOSThread() // ThreadCPU: this goroutine's thread alone
	defer runtime.UnlockOSThread()
	cpu0, start := ThreadCPU(), time.Now()
	for range n {
		if _, err := file.Write(rec); err != nil {
			tb.Fatal(err)
		}
		if err := file.Sync(); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n), (ThreadCPU() - cpu0) / time.Duration(n)
}

// Percentile is the nearest-rank percentile p (0 < p ≤ 1) of sorted, a
// non-empty slice in ascending order.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// QueuedRuns is the count of waiting runs the queued-run memory benchmarks
// measure (engine's BenchmarkQueuedRunMemory and cmd/orkwal's
// BenchmarkOutside/queued, compared on one page): QUEUED, or 60,000.
func QueuedRuns() int {
	if v, err := strconv.Atoi(os.Getenv("QUEUED")); err == nil && v > 0 {
		return v
	}
	return 60000
}
