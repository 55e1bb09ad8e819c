package engine

import "time"

// Clock is the engine's only source of time. Tests inject a fake one.
type Clock interface {
	Now() time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// WallClock is the real clock.
var WallClock Clock = wallClock{}
