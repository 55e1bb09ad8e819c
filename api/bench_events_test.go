package api

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkEventFollowers: what 20 open pages following /events cost the
// engine. On one durable engine, a run of a 5,000-instance noop fan-out
// with no stream open, then one with 20 streams open taking every event
// (a run page on that very run; read over loopback as a browser would),
// then one with 20 streams of run and workflow events only (?tasks=0: the
// workflows and runs pages), then one with 20 streams of each task's
// latest event per write (?latest=1: what a run page asks for), in turn;
// tasks/s and the ratios to none (target: ≥ 0.9, under 10% lost), the
// streams dropped for falling behind, and the bytes a stream read.
//
//	go test -run '^$' -bench BenchmarkEventFollowers -benchtime 3x ./api/
func BenchmarkEventFollowers(b *testing.B) {
	const n, followers = 5000, 20
	srv, eng := loadServer(b)
	req, _ := http.NewRequest("POST", srv.URL+"/workflows", strings.NewReader("name: fan\ntasks:\n  each: {executor: noop, parallel: 5000}\n"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		b.Fatalf("put workflow: %v %v", resp, err)
	}
	run := func() float64 {
		start := time.Now()
		id, err := eng.Trigger("fan", nil, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			ch := eng.Changed()
			if s, _ := eng.RunStatus(id); s == "success" {
				break
			}
			<-ch
		}
		return n / time.Since(start).Seconds()
	}
	var none, with, lists, latest float64
	var events, latestBytes atomic.Int64
	_, dropped0 := eng.EventSubscribers()
	for i := 0; i < b.N; i++ {
		none += run()
		streams := openStreams(b, srv.URL+"/events", followers, &events)
		with += run()
		streams()
		streams = openStreams(b, srv.URL+"/events?tasks=0", followers, new(atomic.Int64))
		lists += run()
		streams()
		streams = openStreams(b, srv.URL+"/events?latest=1", followers, &latestBytes)
		latest += run()
		streams()
	}
	_, dropped := eng.EventSubscribers()
	b.ReportMetric(none/float64(b.N), "tasks/s-none")
	b.ReportMetric(with/float64(b.N), "tasks/s-20-pages")
	b.ReportMetric(with/none, "ratio")
	b.ReportMetric(lists/none, "ratio-run-events")
	b.ReportMetric(latest/none, "ratio-latest")
	b.ReportMetric(float64(latestBytes.Load())/float64(b.N*followers), "bytes/stream-run-latest")
	b.ReportMetric(float64(dropped-dropped0), "dropped")
	b.ReportMetric(float64(events.Load())/float64(b.N*followers), "bytes/stream-run")
}

// openStreams opens k event streams that read everything they are sent,
// adding the bytes read to count; the returned func closes them.
func openStreams(b *testing.B, url string, k int, count *atomic.Int64) func() {
	var wg sync.WaitGroup
	var bodies []interface{ Close() error }
	for j := 0; j < k; j++ {
		resp, err := http.Get(url)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("events: %v %v", resp, err)
		}
		bodies = append(bodies, resp.Body)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, _ := io.Copy(io.Discard, resp.Body)
			count.Add(n)
		}()
	}
	return func() {
		for _, body := range bodies {
			body.Close()
		}
		wg.Wait()
	}
}
