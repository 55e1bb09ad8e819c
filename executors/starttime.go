package executors

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A child's start time (field 22 of /proc/PID/stat, see ProcStartTime) is
// the CLOCK_BOOTTIME of its fork in clock ticks: Linux stamps it inside
// the clone call, so it lies between the clock read right before the
// spawn and the one right after it. When both reads fall in the same tick
// (a spawn takes a fraction of a millisecond, a tick is 10 ms: nearly
// always), that tick is the start time, and /proc, whose stat file costs
// the kernel more to make than the spawn's own bookkeeping, is not read.
// Otherwise, and until the first child has shown that the two agree on
// this system (a clock-tick rate other than 100 Hz, say), /proc is read.

// nsPerTick is the length of a clock tick (USER_HZ = 100 on Linux; a
// system where it differs fails the first check and reads /proc).
const nsPerTick = 10_000_000

// tickCheck is whether the ticks read around a spawn were seen to be the
// start time that /proc shows: 0 not yet, 1 they were, -1 they were not.
var tickCheck atomic.Int32

// bootTick is the current CLOCK_BOOTTIME in clock ticks; 0 when the clock
// cannot be read.
func bootTick() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano()) / nsPerTick
}

// startTime is the start time of child pid, whose spawn began at tick
// before and returned at tick after (see bootTick); 0 when it cannot be
// known. The child must not have been reaped.
func startTime(pid int, before, after uint64) uint64 {
	sameTick := before != 0 && before == after
	if sameTick && tickCheck.Load() == 1 {
		return before
	}
	st, err := ProcStartTime(pid)
	if err != nil {
		return 0
	}
	if sameTick && tickCheck.Load() == 0 {
		if st == before {
			tickCheck.CompareAndSwap(0, 1)
		} else {
			tickCheck.Store(-1)
		}
	}
	return st
}
