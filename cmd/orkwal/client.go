package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// clientTimeout bounds every request of the CLI to the daemon.
const clientTimeout = 30 * time.Second

// maxErrorBody caps how much of an error answer is read.
const maxErrorBody = 64 << 10

// client talks to the daemon's HTTP API. Its errors are *exitError values
// carrying the exit code that fits: exitNotFound for 404, exitServer for an
// unreachable daemon or a 5xx answer, exitFailure for other 4xx answers.
type client struct {
	addr   string // as given by the user, for messages
	base   string // scheme://host[:port][/prefix], without a trailing slash
	token  string // sent as "Authorization: Bearer <token>" when not empty
	http   *http.Client
	stream *http.Client // for answers that last (log streams): no overall timeout
}

// apiError is an error answer of the API: its status and {"error"} message.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

// newClient accepts host:port or a full http(s):// URL, and the API token
// ("" for none).
func newClient(addr, token string) (*client, error) {
	base, err := baseURL(addr)
	if err != nil {
		return nil, exitf(exitUsage, "--addr %q: %v", addr, err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = clientTimeout
	return &client{addr: addr, base: base, token: token, http: &http.Client{Timeout: clientTimeout},
		stream: &http.Client{Transport: tr}}, nil
}

func baseURL(addr string) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", errors.New("empty address")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("scheme %q: use host:port or an http:// or https:// URL", u.Scheme)
	}
	if u.Host == "" {
		return "", errors.New("no host: use host:port or an http:// or https:// URL")
	}
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimRight(u.String(), "/"), nil
}

// request is one call to the API.
type request struct {
	method      string
	path        string // already escaped, with its query
	contentType string
	body        []byte
	header      http.Header
	stream      bool // the answer may last: no overall timeout
}

// send performs req. On success the caller closes the response body; any
// transport failure or status >= 400 comes back as an *exitError.
func (cl *client) send(ctx context.Context, req request) (*http.Response, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, cl.base+req.path, body)
	if err != nil {
		return nil, exitf(exitFailure, "%s %s: %v", req.method, req.path, err)
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	hr.Header.Set("Accept", "application/json")
	if cl.token != "" {
		hr.Header.Set("Authorization", "Bearer "+cl.token)
	}
	hc := cl.http
	if req.stream {
		hc = cl.stream
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return nil, cl.unreachable(err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, cl.answerError(resp)
	}
	return resp, nil
}

// unreachable is the error for a request that got no answer.
func (cl *client) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &exitError{code: exitServer,
		err: fmt.Errorf("cannot reach orkwal at %s: %w (is \"orkwal run\" running?)", cl.addr, err)}
}

// answerError turns an error answer into an *exitError wrapping an *apiError.
func (cl *client) answerError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ae := &apiError{Status: resp.StatusCode, Msg: errorMessage(resp, data)}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return &exitError{code: exitNotFound, err: ae}
	case resp.StatusCode >= 500:
		return &exitError{code: exitServer,
			err: fmt.Errorf("orkwal at %s answered %s: %w", cl.addr, resp.Status, ae)}
	}
	return &exitError{code: exitFailure, err: ae}
}

// errorMessage is the {"error"} of an answer, or a short excerpt of a body
// that is not the API's (a proxy's page, another server).
func errorMessage(resp *http.Response, data []byte) string {
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != "" {
		return body.Error
	}
	text := strings.Join(strings.Fields(string(data)), " ")
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	if text == "" {
		return resp.Status
	}
	return resp.Status + ": " + text
}

// raw performs req and returns the status and the whole body.
func (cl *client) raw(ctx context.Context, req request) (int, []byte, error) {
	resp, err := cl.send(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, cl.unreachable(fmt.Errorf("read answer of %s %s: %w", req.method, req.path, err))
	}
	return resp.StatusCode, data, nil
}

// call performs req, decodes the JSON answer into out (when not nil) and
// returns the status and the raw body.
func (cl *client) call(ctx context.Context, req request, out any) (int, []byte, error) {
	status, data, err := cl.raw(ctx, req)
	if err != nil || out == nil {
		return status, data, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return 0, nil, exitf(exitServer, "%s %s at %s: unexpected answer: %v", req.method, req.path, cl.addr, err)
	}
	return status, data, nil
}

// get is a GET decoding its JSON answer into out; it returns the raw body.
func (cl *client) get(ctx context.Context, path string, out any) ([]byte, error) {
	_, data, err := cl.call(ctx, request{method: http.MethodGet, path: path}, out)
	return data, err
}

// postJSON POSTs v as JSON and decodes the answer into out.
func (cl *client) postJSON(ctx context.Context, path string, header http.Header, v, out any) (int, []byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, nil, exitf(exitFailure, "encode request: %v", err)
	}
	return cl.call(ctx, request{method: http.MethodPost, path: path, contentType: "application/json",
		body: body, header: header}, out)
}

// getPage is a GET of one page of a list: it decodes the JSON answer into
// out and returns the next page's cursor ("" on the last page) and the raw
// body.
func (cl *client) getPage(ctx context.Context, path string, out any) (next string, raw []byte, err error) {
	resp, err := cl.send(ctx, request{method: http.MethodGet, path: path})
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		return "", nil, cl.unreachable(fmt.Errorf("read answer of GET %s: %w", path, err))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return "", nil, exitf(exitServer, "GET %s at %s: unexpected answer: %v", path, cl.addr, err)
	}
	return resp.Header.Get("X-Next-Cursor"), raw, nil
}

// copyTo streams the answer of a GET to w. With stream, the answer may last
// (no overall timeout); it returns the answer's headers and, once it
// ended, its trailers.
func (cl *client) copyTo(ctx context.Context, path string, w io.Writer, stream bool) (header, trailer http.Header, err error) {
	resp, err := cl.send(ctx, request{method: http.MethodGet, path: path, stream: stream})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	ew := &errWriter{w: w}
	if _, err := io.Copy(ew, resp.Body); err != nil {
		if ew.err != nil {
			return nil, nil, exitf(exitFailure, "write output: %v", ew.err)
		}
		if ctx.Err() != nil {
			return nil, nil, exitf(exitFailure, "GET %s: %v", path, ctx.Err())
		}
		return nil, nil, &exitError{code: exitServer, err: fmt.Errorf("GET %s: the answer from %s broke off: %w", path, cl.addr, err)}
	}
	return resp.Header, resp.Trailer, nil
}

// errWriter keeps the error of its writer, to tell it from a read error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}
