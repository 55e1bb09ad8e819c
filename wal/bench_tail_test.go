package wal_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkAppendTail explains BenchmarkAppend's p99.9 at many appenders:
// for the slowest 0.1% of appends it splits each one's latency into the
// phases of the group commit it went through, from timestamps taken through
// Options.Fault (which returns nil: nothing is injected) and the appends'
// own clocks:
//
//	queued  from the call to the end of the commit in progress when it came
//	        (frame index-1 durable; 0 if none was in progress)
//	gather  from then to its own frame handed to the file (the gather wait
//	        and the write)
//	fsync   from there to the first append of its frame returning (the
//	        segment fsync, and the folder's when the frame created a segment)
//	wake    from that to this append returning (the scheduler waking it)
//
// It also reports the segments created, the garbage collector's cycles and
// pause total over the run, and the writes over 2.5 ms. A diagnosis, not a
// target: not in make bench.
//
//	go test -run '^$' -bench BenchmarkAppendTail -benchtime 200000x ./wal/
func BenchmarkAppendTail(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(fmt.Sprintf("appenders=%d", n), func(b *testing.B) { benchAppendTail(b, n) })
	}
}

type tailCall struct {
	t0, end time.Time
	index   uint64
}

func benchAppendTail(b *testing.B, appenders int) {
	// wrote[i]: when frame i was handed to the file. Fault runs under the
	// log's write lock, one frame at a time, in index order; the appenders'
	// done.Wait orders its last write before the reads below.
	wrote := []time.Time{{}}
	var fs fsyncCounter
	fs.onWrite = func() { wrote = append(wrote, time.Now()) }
	l := openBench(b, 0, &fs)
	defer l.Close()
	calls := make([][]tailCall, appenders)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for g := range appenders {
		n := b.N / appenders
		if g < b.N%appenders {
			n++
		}
		calls[g] = make([]tailCall, 0, n)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			rec := record(g)
			ready.Done()
			<-start
			for range n {
				t0 := time.Now()
				idx, err := l.Append([][]byte{rec})
				if err != nil {
					b.Error(err)
					return
				}
				calls[g] = append(calls[g], tailCall{t0, time.Now(), idx})
			}
		}()
	}
	ready.Wait()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	close(start)
	done.Wait()
	b.StopTimer()
	runtime.ReadMemStats(&ms1)

	all := slices.Concat(calls...)
	last := l.LastIndex()
	durable := make([]time.Time, last+2) // first return per frame
	for _, c := range all {
		if d := durable[c.index]; d.IsZero() || c.end.Before(d) {
			durable[c.index] = c.end
		}
	}
	slices.SortFunc(all, func(x, y tailCall) int { return int(x.end.Sub(x.t0) - y.end.Sub(y.t0)) })
	slow := all[len(all)-max(1, len(all)/1000):]
	var queued, gather, fsync, wake time.Duration
	for _, c := range slow {
		q := c.t0
		if p := durable[c.index-1]; c.index > 1 && p.After(c.t0) {
			q = p
		}
		queued += q.Sub(c.t0)
		gather += wrote[c.index].Sub(q)
		fsync += durable[c.index].Sub(wrote[c.index])
		wake += c.end.Sub(durable[c.index])
	}
	n := time.Duration(len(slow))
	b.ReportMetric(us(slow[0].end.Sub(slow[0].t0)), "p999-µs")
	b.ReportMetric(us(queued/n), "slow-queued-µs")
	b.ReportMetric(us(gather/n), "slow-gather+write-µs")
	b.ReportMetric(us(fsync/n), "slow-fsync-µs")
	b.ReportMetric(us(wake/n), "slow-wake-µs")
	b.ReportMetric(float64(ms1.NumGC-ms0.NumGC), "gc-cycles")
	b.ReportMetric(float64(ms1.PauseTotalNs-ms0.PauseTotalNs)/1e3, "gc-pause-µs")
	b.ReportMetric(float64(fs.folder.Load()), "segments-created")
	// The write alone (encoding and write(2); through tidwall/wal's Write,
	// its in-memory tail buffer too, before 2026-11-23), from the log's own
	// histogram: how many took over 2.5 ms.
	cum, sum, count := l.WriteLatency.Snapshot()
	b.ReportMetric(float64(count-cum[4]), "writes>2.5ms")
	b.ReportMetric(sum/float64(count)*1e6, "write-mean-µs")
	reportRate(b, b.N)
}
