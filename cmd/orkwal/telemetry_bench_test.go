package main

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// BenchmarkTelemetryNoop measures what OTLP export costs noop throughput:
// benchRuns runs of benchTasks noop tasks each, triggered at once, timed
// until the last ends, with export off and on (to an in-process OTLP
// receiver; the flush after the timing is checked, not timed). Compare
// the two in the same run (docs/telemetry.md).
func BenchmarkTelemetryNoop(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var took time.Duration
			for i := 0; i < b.N; i++ {
				took += benchTelemetryNoop(b, on)
			}
			b.ReportMetric(float64(b.N*benchRuns*benchTasks)/took.Seconds(), "tasks/s")
		})
	}
}

const benchRuns, benchTasks = 200, 5

func benchTelemetryNoop(b *testing.B, on bool) time.Duration {
	quietLog := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.Open(engine.Config{DataDir: b.TempDir(), Logger: quietLog, MaxConcurrent: 64,
		Executors: map[string]executors.Executor{"noop": executors.Noop{}}})
	if err != nil {
		b.Fatal(err)
	}
	var tel *telemetry
	var recv *otlpReceiver
	if on {
		recv = newOTLPReceiver(b)
		exp, err := otlpConfig(func(k string) string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL}[k]
		})
		if err != nil {
			b.Fatal(err)
		}
		tel = newTelemetry(e, exp, resourceProto(resource.Default()), quietLog)
	}
	e.Start()
	tasks := make([]*workflow.Task, benchTasks)
	for i := range tasks {
		tasks[i] = &workflow.Task{Name: string(rune('a' + i)), Executor: "noop"}
		if i > 0 {
			tasks[i].DependsOn = []string{tasks[i-1].Name}
		}
	}
	if _, _, err := e.PutWorkflow(&workflow.Spec{Name: "chain", Tasks: tasks}, ""); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	ids := make([]string, benchRuns)
	for i := range ids {
		if ids[i], err = e.Trigger("chain", nil, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	for _, id := range ids {
		for {
			ch := e.Changed()
			if s, _ := e.RunStatus(id); s == "success" {
				break
			}
			<-ch
		}
	}
	took := time.Since(start)
	e.Close()
	if on {
		tel.stop()
		spans := 0
		for len(recv.requests) > 0 {
			msg := <-recv.requests
			for _, rs := range msg.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					spans += len(ss.Spans)
				}
			}
		}
		if want := benchRuns * (benchTasks + 1); spans != want {
			b.Fatalf("%d spans exported, want %d", spans, want)
		}
	}
	return took
}

// BenchmarkTelemetryEncode is the exporter goroutine's CPU per run of
// benchTasks tasks, one attempt each: its spans built and encoded.
func BenchmarkTelemetryEncode(b *testing.B) {
	now := time.Now()
	run := engine.RunView{ID: "0192f3a4-5b6c-7d8e-9f00-112233445566", Workflow: "chain", Status: "success",
		CreatedAt: now, StartedAt: &now, FinishedAt: &now}
	for i := 0; i < benchTasks; i++ {
		name := string(rune('a' + i))
		run.Tasks = append(run.Tasks, engine.TaskView{ID: run.ID + ":" + name, Name: name,
			AttemptHistory: []engine.AttemptView{{Attempt: 1, Status: "success", StartedAt: now, FinishedAt: now}}})
	}
	res := resourceProto(resource.Default())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		data := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource: res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: runSpans(run)}}}}}
		if _, err := proto.Marshal(data); err != nil {
			b.Fatal(err)
		}
	}
}
