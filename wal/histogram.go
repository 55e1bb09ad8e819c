package wal

import (
	"math"
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds, in seconds, of Histogram buckets:
// 100µs to 60s.
var LatencyBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram counts durations in LatencyBuckets. It is safe for concurrent
// use; WAL and engine metrics use it.
type Histogram struct {
	counts [19]atomic.Uint64 // one per bucket, then +Inf
	sum    atomic.Uint64     // float64 bits, seconds
	n      atomic.Uint64
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(LatencyBuckets) && s > LatencyBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.n.Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+s)) {
			return
		}
	}
}

// Snapshot returns cumulative counts per bucket (the last is +Inf), the
// sum in seconds and the count.
func (h *Histogram) Snapshot() (cumulative []uint64, sum float64, count uint64) {
	cumulative = make([]uint64, len(h.counts))
	var c uint64
	for i := range h.counts {
		c += h.counts[i].Load()
		cumulative[i] = c
	}
	return cumulative, math.Float64frombits(h.sum.Load()), h.n.Load()
}
