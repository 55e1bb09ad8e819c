package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/orkwal/orkwal/executors"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: each export
// request's spans arrive on spans, with the resource's service.name.
type otlpReceiver struct {
	srv      *httptest.Server
	requests chan *coltracepb.ExportTraceServiceRequest
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{requests: make(chan *coltracepb.ExportTraceServiceRequest, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != "POST" || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: %s %s (%s), want POST /v1/traces in protobuf", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
			http.Error(w, "no", 404)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		msg := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(b, msg)
		}
		if err != nil {
			t.Errorf("OTLP receiver: bad request: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		r.requests <- msg
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// received is a span with its resource's service.name.
type received struct {
	span    *tracepb.Span
	service string
}

// take returns the spans of the next export request, failing after a
// deadline (the daemon is another process: there is no finer signal).
func (r *otlpReceiver) take(t *testing.T) []received {
	t.Helper()
	select {
	case msg := <-r.requests:
		var out []received
		for _, rs := range msg.ResourceSpans {
			service := ""
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, received{s, service})
				}
			}
		}
		return out
	case <-time.After(30 * time.Second):
		t.Fatal("no OTLP export within 30s")
		return nil
	}
}

const telemetryWorkflow = `name: traced
tasks:
  first:
    command: printf '"%s"' "$TRACEPARENT" > "$ORKWAL_OUTPUT"
  second:
    depends_on: [first]
    retries: 1
    retry_backoff: {initial: 10ms, max: 10ms, factor: 1}
    command: '[ "$ORKWAL_ATTEMPT" -gt 1 ] || { echo boom; exit 3; }'
`

// attr is a span attribute's value as text.
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(v.IntValue, 10)
			}
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// TestTelemetryOTLPExport runs a real daemon exporting to an in-process
// OTLP receiver: a run's end exports the run's span and one span per
// attempt under it, in the run's trace, with the span ids the tasks saw
// as TRACEPARENT; without OTEL_EXPORTER_OTLP_ENDPOINT nothing is sent.
func TestTelemetryOTLPExport(t *testing.T) {
	bin := buildBinary(t)
	wf := t.TempDir()
	if err := os.WriteFile(filepath.Join(wf, "traced.yaml"), []byte(telemetryWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	recv := newOTLPReceiver(t)
	d := startDaemonOn(t, bin, t.TempDir(), freeAddr(t), wf,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.srv.URL, "OTEL_SERVICE_NAME=", "OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=test")
	id := d.trigger("traced")
	d.waitStatus(id, "success")
	spans := recv.take(t)

	_, body := d.call("GET", "/runs/"+id, "")
	var run struct {
		Tasks []struct {
			ID     string          `json:"id"`
			Name   string          `json:"name"`
			Output json.RawMessage `json:"output"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatal(err)
	}
	var seen string // the TRACEPARENT task first saw
	for _, task := range run.Tasks {
		if task.Name == "first" {
			json.Unmarshal(task.Output, &seen)
		}
	}
	trace := strings.ReplaceAll(id, "-", "")
	if !strings.HasPrefix(seen, "00-"+trace+"-") {
		t.Fatalf("task first saw TRACEPARENT %q, want the run's trace id %s", seen, trace)
	}

	byName := map[string][]*tracepb.Span{}
	for _, r := range spans {
		if r.service != "orkwal" {
			t.Errorf("span %q from service %q, want orkwal", r.span.Name, r.service)
		}
		if got := hex.EncodeToString(r.span.TraceId); got != trace {
			t.Errorf("span %q in trace %s, want the run id's %s", r.span.Name, got, trace)
		}
		byName[r.span.Name] = append(byName[r.span.Name], r.span)
	}
	if len(spans) != 4 || len(byName["run traced"]) != 1 || len(byName["first"]) != 1 || len(byName["second"]) != 2 {
		t.Fatalf("got %d spans %v, want the run's, first's and second's two attempts", len(spans), byName)
	}
	root := byName["run traced"][0]
	runSpan := executors.RunSpanID(id)
	if !bytes.Equal(root.SpanId, runSpan[:]) || len(root.ParentSpanId) != 0 || root.Status.GetCode() != tracepb.Status_STATUS_CODE_OK {
		t.Errorf("run span id %x parent %x status %v, want id %x, no parent, ok", root.SpanId, root.ParentSpanId, root.Status, runSpan)
	}
	if attr(root, "orkwal.run_id") != id || attr(root, "orkwal.workflow") != "traced" {
		t.Errorf("run span attributes %v", root.Attributes)
	}
	first := byName["first"][0]
	if got := "00-" + trace + "-" + hex.EncodeToString(first.SpanId) + "-01"; got != seen {
		t.Errorf("first's span is %s, but the task saw TRACEPARENT %s", got, seen)
	}
	for _, s := range append(byName["first"], byName["second"]...) {
		if !bytes.Equal(s.ParentSpanId, root.SpanId) {
			t.Errorf("span %q parent %x, want the run's %x", s.Name, s.ParentSpanId, root.SpanId)
		}
		if s.StartTimeUnixNano == 0 || s.EndTimeUnixNano < s.StartTimeUnixNano {
			t.Errorf("span %q from %d to %d", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
	}
	for _, s := range byName["second"] {
		failed := attr(s, "orkwal.attempt") == "1"
		want := tracepb.Status_STATUS_CODE_OK
		if failed {
			want = tracepb.Status_STATUS_CODE_ERROR
			if attr(s, "orkwal.exit_code") != "3" || attr(s, "orkwal.task") != "second" {
				t.Errorf("failed attempt's attributes %v, want exit code 3 and task second", s.Attributes)
			}
		}
		if s.Status.GetCode() != want {
			t.Errorf("second attempt %s status %v, want %v", attr(s, "orkwal.attempt"), s.Status, want)
		}
	}

	// Off by default: the same run, without the variable, exports nothing,
	// even at the graceful shutdown that flushes the export.
	off := startDaemonOn(t, bin, t.TempDir(), freeAddr(t), wf, "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	off.waitStatus(off.trigger("traced"), "success")
	off.cmd.Process.Signal(syscall.SIGTERM)
	if err := off.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, off.logs)
	}
	select {
	case msg := <-recv.requests:
		t.Errorf("exported without OTEL_EXPORTER_OTLP_ENDPOINT: %v", msg)
	default:
	}
}

func TestTelemetryEnabled(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "TRUE"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"}, true},
	} {
		if got := telemetryEnabled(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("telemetryEnabled(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}
