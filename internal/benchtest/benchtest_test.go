package benchtest

import (
	"testing"
	"time"
)

// TestPercentile: the nearest rank, clamped to the slice.
func TestPercentile(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {0.11, 2}, {1, 10}, {0.001, 1}} {
		if got := Percentile(d, c.p); got != c.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("Percentile of one = %v, want 7", got)
	}
}

// TestBareSpawnsAndMeasure: BareSpawns runs its n processes and counts
// their CPU time as its children's; Measure sees the same children through
// the process's reaped-children time.
func TestBareSpawnsAndMeasure(t *testing.T) {
	var spawns Cost
	m := Measure(func() { spawns = BareSpawns(t, 20, 2) })
	if spawns.Wall <= 0 || spawns.Children <= 0 {
		t.Errorf("BareSpawns: %+v; want wall and children's CPU time", spawns)
	}
	if m.Children < spawns.Children || m.Wall < spawns.Wall {
		t.Errorf("Measure %+v saw less than the spawns it ran, %+v", m, spawns)
	}
}
