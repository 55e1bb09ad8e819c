package engine

import "time"

// Clock is the engine's only source of time. Tests inject a fake one.
type Clock interface {
	Now() time.Time
	// After is time.After on this clock: the channel receives once d has
	// passed.
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// WallClock is the real clock.
var WallClock Clock = wallClock{}

// instantClock is a Clock that can also arm a timer for an instant. The
// tests' manual clock is one: with After alone, the time a test moves the
// clock to between the loop's reading of Now and its call to After would
// push the wake-up that much later than the instant it was meant for, and
// the test, having moved the clock to that instant, would wait for good.
type instantClock interface {
	At(t time.Time) <-chan time.Time
}

// atInstant returns a channel that receives once the clock reaches the
// instant at (unix nanoseconds).
func atInstant(c Clock, at int64) <-chan time.Time {
	if ic, ok := c.(instantClock); ok {
		return ic.At(time.Unix(0, at))
	}
	return c.After(time.Duration(at - c.Now().UnixNano()))
}
