package executors

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"
)

// exchange is one request of an HTTP job and what came back.
type exchange struct {
	method string
	url    string // redacted
	// The response; code is 0 when err is set before one arrived.
	code     int
	status   string // "200 OK"
	body     []byte // at most the job's cap
	tooLarge bool   // the body was longer than the cap
	elapsed  time.Duration
	err      error // no usable response (or its body could not be read)
}

// failure returns why x does not count as a successful request: a
// transport error, a non-2xx status, a body over the cap.
func (x *exchange) failure() error {
	switch {
	case x.err != nil:
		return fmt.Errorf("%s %s: %w", x.method, x.url, x.err)
	case x.code < 200 || x.code > 299:
		return statusError(x.code, x.body)
	case x.tooLarge:
		return fmt.Errorf("output larger than %d bytes", len(x.body))
	}
	return nil
}

// statusError is the reason of a non-2xx response: "HTTP 503: <body start>".
func statusError(code int, body []byte) error {
	text := strings.TrimSpace(string(body))
	if len(text) > errBodyBytes {
		text = text[:errBodyBytes]
	}
	text = strings.ToValidUTF8(text, "")
	if text == "" {
		return fmt.Errorf("HTTP %d", code)
	}
	return fmt.Errorf("HTTP %d: %s", code, text)
}

// summary is x as one log line, without the body.
func (x *exchange) summary() string {
	req := x.method + " " + x.url
	ms := x.elapsed.Round(time.Millisecond)
	if x.code == 0 {
		return fmt.Sprintf("%s -> %v (after %v)", req, x.err, ms)
	}
	line := fmt.Sprintf("%s -> %s, %d bytes in %v", req, x.status, len(x.body), ms)
	switch {
	case x.err != nil:
		line += fmt.Sprintf(", %v", x.err)
	case x.tooLarge:
		line += " (truncated: larger than the output cap)"
	}
	return line
}

// headerNames is ", headers: A, B" for the log, never with values.
func headerNames(h map[string]string) string {
	if len(h) == 0 {
		return ""
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	return " (headers: " + strings.Join(names, ", ") + ")"
}

// redactURL returns u for logs and errors: no password, query values
// replaced (an API key is often passed there).
func redactURL(u *url.URL) string {
	c := *u
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		c.RawQuery = q.Encode()
	}
	return c.Redacted()
}

// jsonString encodes data as a JSON string (invalid UTF-8 becomes U+FFFD).
func jsonString(data []byte) []byte {
	out, _ := json.Marshal(string(data)) // a string always encodes
	return out
}

// httpLog appends an HTTP job's lines to its log file (nil: no log).
// Write errors are ignored: the log is for people, not for the outcome.
type httpLog struct {
	w    io.Writer    // nil: no log
	done func() error // completes and closes the log
}

// openHTTPLog opens job's log: capped as a process's output is when
// job.MaxLogBytes is set (head and tail kept, see cappedLog; the file is
// created on the first line), else appended to as it is.
func openHTTPLog(job Job) (httpLog, error) {
	switch {
	case job.LogPath == "":
		return httpLog{}, nil
	case job.MaxLogBytes > 0:
		c, err := newCappedLog(job.LogPath, job.MaxLogBytes)
		if err != nil {
			return httpLog{}, err
		}
		return httpLog{w: c, done: c.finish}, nil
	}
	f, err := openLog(job.LogPath)
	if err != nil {
		return httpLog{}, err
	}
	return httpLog{w: f, done: f.Close}, nil
}

// line writes one "orkwal http: ..." line.
func (l httpLog) line(format string, args ...any) {
	if l.w != nil {
		fmt.Fprintf(l.w, "orkwal http: "+format+"\n", args...)
	}
}

// note writes a line of orkwal's own, as is ("\n[orkwal: ...]\n").
func (l httpLog) note(s string) {
	if l.w != nil && s != "" {
		io.WriteString(l.w, s)
	}
}

// body writes a response body, ending it with a newline. It is written in
// pieces of copyBufSize, so that a capped log whose file is still being
// created keeps at most that much of it in memory (see cappedLog).
func (l httpLog) body(b []byte) {
	if l.w == nil || len(b) == 0 {
		return
	}
	for p := b; len(p) > 0; {
		k := min(len(p), copyBufSize)
		_, _ = l.w.Write(p[:k])
		p = p[k:]
	}
	if b[len(b)-1] != '\n' {
		_, _ = io.WriteString(l.w, "\n")
	}
}

// close completes and closes the log (a capped log's tail is appended).
func (l httpLog) close() error {
	if l.done == nil {
		return nil
	}
	return l.done()
}
