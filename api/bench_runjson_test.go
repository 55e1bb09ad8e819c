package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkRunJSON: GET /runs/{id} of a run of a 5,000-instance fan-out
// (what a monitor polls), served by the handler into a writer that keeps
// nothing: the bytes allocated per request and per task, against the
// body's own size (json-B/task). Issue 27: close to the body's size or less.
//
//	go test -run '^$' -bench BenchmarkRunJSON -benchmem ./api/
func BenchmarkRunJSON(b *testing.B) {
	const n = 5000
	d := startDaemon(b)
	id := fanRun(d, n)
	h := New(d.eng, quiet)
	for _, p := range []struct{ name, path string }{{"api", "/runs/" + id}, {"ui", "/ui/runs/" + id}} {
		b.Run(p.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "http://127.0.0.1"+p.path, nil)
			w := &countingWriter{h: http.Header{}}
			h.ServeHTTP(w, req)
			if w.code != 200 || !strings.Contains(p.path, "ui") && w.n < n*100 {
				b.Fatalf("%s: %d, %d bytes", p.path, w.code, w.n)
			}
			body := w.n
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.n = 0
				h.ServeHTTP(w, req)
			}
			b.StopTimer()
			b.ReportMetric(float64(body)/n, "json-B/task")
		})
	}
}

// countingWriter is a ResponseWriter that counts the body's bytes.
type countingWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *countingWriter) Header() http.Header  { return w.h }
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = 200
	}
	w.n += len(p)
	return len(p), nil
}
