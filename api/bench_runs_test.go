package api

import (
	"testing"
	"time"
)

// BenchmarkRunsToCompletion: RUNS (10,000) one-task noop runs triggered by
// 64 concurrent clients over loopback against a durable engine (the
// default --max-concurrent 16); runs/s from the first trigger to the commit
// that ends the last run. Target: ≥ 5,000 runs/s.
//
//	go test -run '^$' -bench BenchmarkRunsToCompletion -benchtime 1x ./api/
func BenchmarkRunsToCompletion(b *testing.B) {
	const clients, runs = 64, 10000
	var total, trig time.Duration
	for i := 0; i < b.N; i++ {
		srv, eng := loadServer(b)
		cl := loadClient(clients)
		start := time.Now()
		ids, d := triggerBurst(b, cl, srv.URL, clients, runs)
		trig += d
		// Every run to completion: a cursor over the ids, advanced after
		// each commit while the run under it has ended.
		for k := 0; k < runs; {
			ch := eng.Changed()
			for k < runs {
				s, err := eng.RunStatus(ids[k])
				if err != nil {
					b.Fatal(err)
				}
				if s != "success" {
					break
				}
				k++
			}
			if k < runs {
				<-ch
			}
		}
		total += time.Since(start) // loadServer's cleanup closes both
	}
	b.ReportMetric(float64(runs*b.N)/total.Seconds(), "runs/s")
	b.ReportMetric(float64(runs*b.N)/trig.Seconds(), "triggers/s")
}
