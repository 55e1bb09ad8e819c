package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpHTTP sends spans to an OTLP/HTTP receiver in protobuf (POST
// <endpoint>/v1/traces). It is orkwal's own, not the SDK's otlptracehttp:
// that exporter links the OTLP collector package, whose gRPC stubs bring
// google.golang.org/grpc and grpc-gateway into the binary (+5.1 MB,
// over the 15 MiB budget; docs/telemetry.md). The body is the official
// message types (go.opentelemetry.io/proto/otlp): a TracesData, which the
// OTLP specification defines as the same bytes as an
// ExportTraceServiceRequest.
type otlpHTTP struct {
	url     string
	headers http.Header
	gzip    bool
	timeout time.Duration
	client  *http.Client
}

// otlpConfig reads the standard OTEL_EXPORTER_OTLP_* variables, the
// traces-specific one first: ENDPOINT (TRACES_ENDPOINT is the full URL;
// ENDPOINT gets /v1/traces appended), HEADERS (k=v,k=v, URL-encoded
// values), COMPRESSION (gzip or none), TIMEOUT (milliseconds, default
// 10000). An error names the variable.
func otlpConfig(getenv func(string) string) (*otlpHTTP, error) {
	get := func(suffix string) (string, string) {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + suffix); v != "" {
			return "OTEL_EXPORTER_OTLP_TRACES_" + suffix, v
		}
		return "OTEL_EXPORTER_OTLP_" + suffix, getenv("OTEL_EXPORTER_OTLP_" + suffix)
	}
	x := &otlpHTTP{headers: http.Header{}, timeout: 10 * time.Second, client: &http.Client{}}
	name, endpoint := get("ENDPOINT")
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: %q is not an http or https URL", name, endpoint)
	}
	x.url = u.String()
	if name, hs := get("HEADERS"); hs != "" {
		for _, kv := range strings.Split(hs, ",") {
			k, v, ok := strings.Cut(kv, "=")
			v, err := url.QueryUnescape(strings.TrimSpace(v))
			if !ok || strings.TrimSpace(k) == "" || err != nil {
				return nil, fmt.Errorf("%s: %q is not key=value", name, kv)
			}
			x.headers.Add(strings.TrimSpace(k), v)
		}
	}
	switch name, c := get("COMPRESSION"); strings.ToLower(c) {
	case "", "none":
	case "gzip":
		x.gzip = true
	default:
		return nil, fmt.Errorf("%s: %q is not gzip or none", name, c)
	}
	if name, ms := get("TIMEOUT"); ms != "" {
		n, err := strconv.Atoi(ms)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number of milliseconds", name, ms)
		}
		x.timeout = time.Duration(n) * time.Millisecond
	}
	return x, nil
}

// errOTLP is a receiver's refusal.
var errOTLP = errors.New("OTLP receiver refused the spans")

// export sends one request with data's spans.
func (x *otlpHTTP) export(ctx context.Context, data *tracepb.TracesData) error {
	body, err := proto.Marshal(data)
	if err != nil {
		return fmt.Errorf("otlp: encode: %w", err)
	}
	if x.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", x.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	for k, v := range x.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if x.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: POST %s: %w", x.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: POST %s: %s: %q", errOTLP, x.url, resp.Status, msg)
	}
	return nil
}
