package api

import (
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

// BenchmarkMetricsExposition compares the hand-written process and Go
// metrics with client_golang's process and Go collectors writing the same
// families in the text format: the maintained library is what we would use
// instead, so the hand-written code stays only while it is faster (and the
// binary smaller: BenchmarkMetricsLibrarySize in cmd/orkwal).
//
//	go test -run '^$' -bench BenchmarkMetricsExposition -benchmem ./api/
func BenchmarkMetricsExposition(b *testing.B) {
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			writeProcessMetrics(io.Discard)
		}
	})
	b.Run("client_golang", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			mfs, err := reg.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
