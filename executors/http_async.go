package executors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// async makes the start request, reports Started and polls until the work
// ends; it returns the last poll's body as the output.
func (r *httpRun) async() ([]byte, error) {
	x := r.start()
	if err := x.failure(); err != nil {
		return nil, err
	}
	statusURL, remoteID, err := r.statusURL(x.body)
	if err != nil {
		return nil, fmt.Errorf("start response: %w", err)
	}
	started := r.event(Started)
	started.RemoteID = remoteID
	r.report(started)
	return r.poll(statusURL)
}

// statusURL finds in the start response the URL to poll, and the remote id
// (or the redacted status URL) to report.
func (r *httpRun) statusURL(body []byte) (*url.URL, string, error) {
	a := r.spec.Async
	doc, err := decodeJSON(body)
	if err != nil {
		return nil, "", err
	}
	if a.StatusURLField != "" {
		raw, err := fieldString(doc, a.StatusURLField)
		if err != nil {
			return nil, "", err
		}
		ref, err := url.Parse(raw)
		if err != nil {
			return nil, "", fmt.Errorf("field %q: %w", a.StatusURLField, err)
		}
		u, err := parseHTTPURL(r.target.ResolveReference(ref).String())
		if err != nil {
			return nil, "", fmt.Errorf("field %q: %w", a.StatusURLField, err)
		}
		if !headersMayGo(r.target, u) {
			// The remote end chose this URL: polling it would send the
			// job's headers (credentials) wherever it says.
			return nil, "", fmt.Errorf("field %q: status URL %s is not on %s (or a subdomain of it) over the start URL's scheme: "+
				"the task's headers are not sent there (use status_url with {id} to poll another host)",
				a.StatusURLField, redactURL(u), r.target.Hostname())
		}
		return u, redactURL(u), nil
	}
	return r.templateURL(doc)
}

// templateURL is StatusURL with "{id}" replaced by the IDField value.
func (r *httpRun) templateURL(doc any) (*url.URL, string, error) {
	a := r.spec.Async
	id := ""
	if a.IDField != "" {
		var err error
		if id, err = fieldString(doc, a.IDField); err != nil {
			return nil, "", err
		}
	}
	u, err := parseHTTPURL(strings.ReplaceAll(a.StatusURL, "{id}", id))
	if err != nil {
		return nil, "", fmt.Errorf("status url: %w", err)
	}
	if id == "" {
		id = redactURL(u)
	}
	return u, id, nil
}

// poll polls u every PollInterval until a terminal status or Stop.
func (r *httpRun) poll(u *url.URL) ([]byte, error) {
	a := r.spec.Async
	ticker := time.NewTicker(orDefault(a.PollInterval, DefaultPollInterval))
	defer ticker.Stop()
	for n := 1; ; n++ {
		select {
		case <-r.ctx.Done():
			return nil, errStopped
		case <-ticker.C:
		}
		status, body, err := r.pollOnce(n, u)
		if r.exec.observePoll != nil {
			r.exec.observePoll(err)
		}
		switch {
		case err != nil:
			continue
		case slices.Contains(a.Success, status):
			return bodyOutput(body, r.job.MaxOutputBytes)
		case slices.Contains(a.Failure, status):
			out, _ := bodyOutput(body, r.job.MaxOutputBytes)
			return out, fmt.Errorf("remote status %q", status)
		}
		hb := r.event(Heartbeat)
		hb.Status = status
		r.report(hb)
	}
}

// pollOnce makes poll n and returns the status it saw and the body; an
// error (logged here) means the poll failed.
func (r *httpRun) pollOnce(n int, u *url.URL) (string, []byte, error) {
	a := r.spec.Async
	timeout := orDefault(a.PollTimeout, orDefault(r.spec.Timeout, DefaultHTTPTimeout))
	x := r.do(http.MethodGet, u, nil, timeout)
	status, err := r.pollStatus(x)
	if err != nil {
		r.log.line("poll %d: %s: failed: %v", n, x.summary(), err)
		return "", nil, err
	}
	r.log.line("poll %d: %s: status %q", n, x.summary(), status)
	if slices.Contains(a.Success, status) || slices.Contains(a.Failure, status) {
		r.log.body(x.body)
	}
	return status, x.body, nil
}

// pollStatus returns the status value of a poll response.
func (r *httpRun) pollStatus(x *exchange) (string, error) {
	if err := x.failure(); err != nil {
		return "", err
	}
	doc, err := decodeJSON(x.body)
	if err != nil {
		return "", err
	}
	v, ok := lookupField(doc, r.spec.Async.StatusField)
	if !ok || v == nil {
		return "", nil // not there yet: still running
	}
	s, ok := scalarString(v)
	if !ok {
		return "", fmt.Errorf("field %q is not a string, number or boolean", r.spec.Async.StatusField)
	}
	return s, nil
}

// errNotJSON is the reason of a response that should be JSON and is not.
var errNotJSON = errors.New("response is not JSON")

// decodeJSON decodes body, keeping numbers as written.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, errNotJSON
	}
	if dec.More() {
		return nil, errNotJSON
	}
	return doc, nil
}

// fieldString returns the value at path in doc as a non-empty string.
func fieldString(doc any, path string) (string, error) {
	v, ok := lookupField(doc, path)
	if !ok {
		return "", fmt.Errorf("field %q not found", path)
	}
	s, ok := scalarString(v)
	if !ok || s == "" {
		return "", fmt.Errorf("field %q is not a non-empty string or number", path)
	}
	return s, nil
}

// lookupField follows a dotted path through objects (and, by index,
// arrays) of a decoded JSON document.
func lookupField(doc any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		switch v := doc.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return nil, false
			}
			doc = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			doc = v[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// scalarString returns a string as is, and a number or boolean in JSON
// notation.
func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}
