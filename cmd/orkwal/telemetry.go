package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// Telemetry: OTLP export of run and attempt spans, off unless the standard
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (docs/telemetry.md). Spans are built after the fact, from durable state:
// a subscriber to the engine's events queues the id of each run that
// ended; an exporter goroutine reads the run (its tasks and attempts with
// their times) and exports a span for the run and one per attempt under
// it, with the ids the tasks were given as TRACEPARENT
// (executors.TraceID, RunSpanID, AttemptSpanID). Nothing runs on the
// engine's loop: the subscription never makes it wait, and a full export
// queue drops the run and counts it.

// Telemetry queue sizes: entries the subscription may buffer, runs waiting
// for export.
const (
	telemetrySubBuffer = 1024
	telemetryQueue     = 1024
	telemetryTimeout   = 10 * time.Second // one export, and the flush at shutdown
)

// telemetryEnabled reports whether the environment asks for OTLP export.
func telemetryEnabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// spanExporter sends spans: otlpHTTP.
type spanExporter interface {
	export(ctx context.Context, data *tracepb.TracesData) error
}

// telemetry exports the spans of ended runs.
type telemetry struct {
	eng      *engine.Engine
	exp      spanExporter
	res      *resourcepb.Resource
	logger   *slog.Logger
	queue    chan string // ids of ended runs
	sub      *engine.Subscription
	done     chan struct{}
	dropped  atomic.Int64
	failed   atomic.Int64
	stopOnce sync.Once
}

// startTelemetry starts the export when the environment asks for it
// (before eng.Start, so no run's end is missed); stop flushes it. Without
// it, stop does nothing.
func startTelemetry(eng *engine.Engine, logger *slog.Logger) (stop func(), err error) {
	if !telemetryEnabled(os.Getenv) {
		return func() {}, nil
	}
	exp, err := otlpConfig(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	// service.name=orkwal unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
	res, err := resource.New(context.Background(), resource.WithAttributes(attribute.String("service.name", "orkwal")),
		resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tel := newTelemetry(eng, exp, resourceProto(res), logger)
	logger.Info("exporting run and task spans over OTLP/HTTP", "url", exp.url)
	return tel.stop, nil
}

func newTelemetry(eng *engine.Engine, exp spanExporter, res *resourcepb.Resource, logger *slog.Logger) *telemetry {
	t := &telemetry{eng: eng, exp: exp, res: res, logger: logger,
		queue: make(chan string, telemetryQueue), done: make(chan struct{}),
		sub: eng.Subscribe(telemetrySubBuffer)}
	go t.watch()
	go t.export()
	return t
}

// watch queues the id of each run that ends, never waiting: a full queue
// drops the run. A subscription dropped for falling behind is renewed;
// the runs that ended meanwhile are not exported, and the log says so.
func (t *telemetry) watch() {
	defer close(t.queue)
	for {
		for batch := range t.sub.C {
			for i := range batch.Events {
				if ev := &batch.Events[i]; ev.Type == "run_finished" {
					t.enqueue(ev.Run)
				}
			}
		}
		if !t.sub.Dropped() {
			return // the engine stopped
		}
		t.logger.Warn("telemetry: fell behind the engine's events; the runs that ended meanwhile are not exported")
		t.sub = t.eng.Subscribe(telemetrySubBuffer)
	}
}

func (t *telemetry) enqueue(run string) {
	select {
	case t.queue <- run:
	default:
		if n := t.dropped.Add(1); n&(n-1) == 0 { // 1, 2, 4, ...: a full queue is said, not flooded
			t.logger.Warn("telemetry: export queue full; run's spans dropped", "run", run, "dropped", n)
		}
	}
}

// export exports the queued runs' spans until the queue is closed.
func (t *telemetry) export() {
	defer close(t.done)
	for id := range t.queue {
		run, err := t.eng.Run(id)
		if err != nil {
			continue // removed by retention already
		}
		ctx, cancel := context.WithTimeout(context.Background(), telemetryTimeout)
		err = t.exp.export(ctx, &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
			Resource: t.res, ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: runSpans(run)}}}}})
		cancel()
		if err != nil {
			if n := t.failed.Add(1); n&(n-1) == 0 {
				t.logger.Warn("telemetry: OTLP export failed", "run", id, "err", err, "failed", n)
			}
		}
	}
}

// stop waits for the runs queued until the engine stopped to be exported
// (the engine must be closed first: that ends the subscription), within
// telemetryTimeout.
func (t *telemetry) stop() {
	t.stopOnce.Do(func() {
		select {
		case <-t.done:
		case <-time.After(telemetryTimeout):
			t.logger.Warn("telemetry: gave up flushing spans at shutdown")
		}
	})
}

// scope names the spans' instrumentation.
var scope = &commonpb.InstrumentationScope{Name: "github.com/orkwal/orkwal"}

// runSpans returns a run's span and, as its children, one span per
// recorded attempt of each of its tasks.
func runSpans(run engine.RunView) []*tracepb.Span {
	traceID := executors.TraceID(run.ID)
	runSpan := executors.RunSpanID(run.ID)
	start := run.CreatedAt
	if run.StartedAt != nil {
		start = *run.StartedAt
	}
	end := start
	if run.FinishedAt != nil {
		end = *run.FinishedAt
	}
	spans := []*tracepb.Span{{
		TraceId: traceID[:], SpanId: runSpan[:], Name: "run " + run.Workflow,
		Kind: tracepb.Span_SPAN_KIND_INTERNAL, Flags: 1, // sampled
		StartTimeUnixNano: uint64(start.UnixNano()), EndTimeUnixNano: uint64(end.UnixNano()),
		Status: spanStatus(run.Status, ""),
		Attributes: []*commonpb.KeyValue{str("orkwal.run_id", run.ID), str("orkwal.workflow", run.Workflow),
			str("orkwal.status", run.Status), str("orkwal.trigger", run.Trigger)},
	}}
	for _, task := range run.Tasks {
		for _, a := range task.AttemptHistory {
			id := executors.AttemptSpanID(task.ID, a.Attempt)
			attrs := []*commonpb.KeyValue{str("orkwal.run_id", run.ID), str("orkwal.workflow", run.Workflow),
				str("orkwal.task", task.Name), num("orkwal.attempt", int64(a.Attempt)),
				str("orkwal.status", a.Status), num("orkwal.exit_code", int64(a.ExitCode))}
			if a.Error != "" {
				attrs = append(attrs, str("orkwal.error", a.Error))
			}
			spans = append(spans, &tracepb.Span{
				TraceId: traceID[:], SpanId: id[:], ParentSpanId: runSpan[:], Name: task.Name,
				Kind: tracepb.Span_SPAN_KIND_INTERNAL, Flags: 1,
				StartTimeUnixNano: uint64(a.StartedAt.UnixNano()), EndTimeUnixNano: uint64(a.FinishedAt.UnixNano()),
				Status: spanStatus(a.Status, a.Error), Attributes: attrs,
			})
		}
	}
	return spans
}

// spanStatus is a span's status from a run's or an attempt's: Ok on
// success, Error when it failed, Unset otherwise (cancelled, interrupted,
// skipped).
func spanStatus(status, msg string) *tracepb.Status {
	switch status {
	case "success":
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	case "failed":
		if msg == "" {
			msg = "failed"
		}
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: msg}
	}
	return &tracepb.Status{}
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// resourceProto is the SDK's resource as OTLP attributes.
func resourceProto(res *resource.Resource) *resourcepb.Resource {
	out := &resourcepb.Resource{}
	for _, kv := range res.Attributes() {
		v := &commonpb.AnyValue{}
		switch kv.Value.Type() {
		case attribute.BOOL:
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: kv.Value.AsBool()}
		case attribute.INT64:
			v.Value = &commonpb.AnyValue_IntValue{IntValue: kv.Value.AsInt64()}
		case attribute.FLOAT64:
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
		default:
			v.Value = &commonpb.AnyValue_StringValue{StringValue: kv.Value.Emit()}
		}
		out.Attributes = append(out.Attributes, &commonpb.KeyValue{Key: string(kv.Key), Value: v})
	}
	return out
}
