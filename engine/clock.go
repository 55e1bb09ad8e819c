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
