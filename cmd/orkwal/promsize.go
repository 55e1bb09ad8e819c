//go:build promsize

package main

// Built only by BenchmarkMetricsLibrarySize: the daemon as it would be with
// client_golang serving the process and Go metrics, to measure what the
// library would add to the binary.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var promHandler http.Handler

func init() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	promHandler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
