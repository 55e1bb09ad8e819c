package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// loadServer is the API over a real, durable engine (it fsyncs every turn)
// on a temporary folder, with noop tasks.
func loadServer(tb testing.TB) (*httptest.Server, *engine.Engine) {
	tb.Helper()
	eng, err := engine.Open(engine.Config{DataDir: tb.TempDir(), Logger: quiet,
		MaxPendingRuns: 1 << 30, MaxPendingRunsPerWorkflow: 1 << 30, // load, not admission
		Executors: map[string]executors.Executor{"process": executors.Noop{}, "noop": executors.Noop{}}})
	if err != nil {
		tb.Fatal(err)
	}
	eng.Start()
	srv := httptest.NewServer(New(eng, quiet))
	tb.Cleanup(func() { srv.Close(); eng.Close() })
	req, _ := http.NewRequest("POST", srv.URL+"/workflows", strings.NewReader("name: load\nparams: {n: '0'}\ntasks:\n  t: {executor: noop}\n"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 201 {
		tb.Fatalf("put workflow: %v %v", resp, err)
	}
	resp.Body.Close()
	return srv, eng
}

// loadClient keeps a connection per concurrent client.
func loadClient(conns int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = conns, conns
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// triggerOnce POSTs a trigger and returns its status, run id and latency.
func triggerOnce(cl *http.Client, url string, n int) (int, string, time.Duration, error) {
	start := time.Now()
	resp, err := cl.Post(url+"/workflows/load/runs", "application/json", strings.NewReader(fmt.Sprintf(`{"params": {"n": %d}}`, n)))
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	var created struct{ ID string }
	body, _ := io.ReadAll(resp.Body)
	json.Unmarshal(body, &created)
	return resp.StatusCode, created.ID, time.Since(start), nil
}

// TestConcurrentTriggers: 50 clients send 1,000 triggers in all over
// loopback: every one is a 201 with a distinct run, none is a 5xx, and
// paging through GET /runs with the cursor lists each exactly once.
func TestConcurrentTriggers(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 durable triggers")
	}
	const clients, total = 50, 1000
	srv, eng := loadServer(t)
	cl := loadClient(clients)
	var next atomic.Int64
	var mu sync.Mutex
	created := map[string]bool{}
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1))
				if n > total {
					return
				}
				code, id, _, err := triggerOnce(cl, srv.URL, n)
				mu.Lock()
				if err != nil {
					t.Errorf("trigger %d: %v", n, err)
				}
				statuses[code]++
				if code == 201 {
					if created[id] {
						t.Errorf("run id %s twice", id)
					}
					created[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if statuses[201] != total || len(created) != total {
		t.Fatalf("answers %v, %d runs; want %d × 201", statuses, len(created), total)
	}

	// Every run, once, through the cursor.
	listed := map[string]bool{}
	path, pages := "/runs?workflow=load&limit=128", 0
	var prev time.Time
	for path != "" {
		resp, err := cl.Get(srv.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", path, resp, err)
		}
		var page []engine.RunView
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		for _, r := range page {
			if listed[r.ID] {
				t.Fatalf("run %s listed twice", r.ID)
			}
			if !prev.IsZero() && r.CreatedAt.After(prev) {
				t.Fatalf("run %s out of order", r.ID)
			}
			listed[r.ID], prev = true, r.CreatedAt
		}
		path = ""
		if link := resp.Header.Get("Link"); link != "" {
			path = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
		}
		pages++
	}
	if len(listed) != total || pages != 8 {
		t.Fatalf("listed %d runs in %d pages, want %d in 8", len(listed), pages, total)
	}
	for id := range created {
		if !listed[id] {
			t.Fatalf("run %s not listed", id)
		}
	}
	if eng.Err() != nil {
		t.Fatal(eng.Err())
	}
}

// BenchmarkTriggers: durable triggers at 64 concurrent clients over
// loopback; reports triggers/s and the p99 latency in µs.
//
//	go test -run '^$' -bench BenchmarkTriggers -benchtime 2000x ./api/
func BenchmarkTriggers(b *testing.B) {
	const clients = 64
	srv, _ := loadServer(b)
	cl := loadClient(clients)
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= b.N {
					return
				}
				code, _, d, err := triggerOnce(cl, srv.URL, n)
				if err != nil || code != 201 {
					failed.Add(1)
				}
				lat[n] = d
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d triggers failed", failed.Load())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := lat[min(len(lat)-1, len(lat)*99/100)]
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "triggers/s")
	b.ReportMetric(float64(p99.Microseconds()), "p99_µs")
}
