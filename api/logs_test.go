package api

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gate is a FIFO a task blocks on (cat) until the test opens it.
type gate struct {
	t    *testing.T
	path string
}

func newGate(t *testing.T) *gate {
	path := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return &gate{t: t, path: path}
}

// open lets the task blocked on the gate go on, printing text.
func (g *gate) open(text string) {
	f, err := os.OpenFile(g.path, os.O_WRONLY, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	f.WriteString(text)
	f.Close()
}

// stream is a log stream being read.
type stream struct {
	t    *testing.T
	resp *http.Response
	r    *bufio.Reader
}

// guardClient bounds a whole stream: a failure guard, not a synchronization.
var guardClient = &http.Client{Timeout: 30 * time.Second}

func (f *fixture) follow(path string) *stream {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	resp, err := guardClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	return &stream{t: f.t, resp: resp, r: bufio.NewReader(resp.Body)}
}

func (s *stream) line() string {
	s.t.Helper()
	l, err := s.r.ReadString('\n')
	if err != nil {
		s.t.Fatalf("read a line of the stream: %q %v", l, err)
	}
	return l
}

// rest reads the stream to its end and returns it and the end trailer.
func (s *stream) rest() (string, string) {
	s.t.Helper()
	b, err := io.ReadAll(s.r)
	if err != nil {
		s.t.Fatalf("read the stream: %v", err)
	}
	return string(b), s.resp.Trailer.Get(FollowEndTrailer)
}

func TestFollowStreamsUntilTheAttemptEnds(t *testing.T) {
	f := newFixture(t)
	g := newGate(t)
	f.put("name: talk\ntasks:\n  t: {command: 'echo first; cat " + g.path + "; echo last'}\n")
	id := f.trigger("talk")
	s := f.follow("/runs/" + id + "/tasks/t/logs?follow=1")
	if s.resp.StatusCode != 200 || s.resp.Header.Get("X-Orkwal-Attempt") != "1" ||
		!strings.HasPrefix(s.resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("follow: %d %v", s.resp.StatusCode, s.resp.Header)
	}
	if l := s.line(); l != "first\n" {
		t.Fatalf("first line %q", l)
	}
	g.open("middle\n")
	rest, end := s.rest()
	if rest != "middle\nlast\n" || end != FollowEndAttempt {
		t.Fatalf("rest %q, end %q", rest, end)
	}
	if s.resp.TransferEncoding == nil || s.resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("not chunked: %v", s.resp.TransferEncoding)
	}
	// Following an ended attempt prints it all and ends.
	rest, end = f.follow("/runs/" + id + "/tasks/t/logs?follow=true&attempt=1").rest()
	if rest != "first\nmiddle\nlast\n" || end != FollowEndAttempt {
		t.Fatalf("ended attempt: %q %q", rest, end)
	}
}

// TestFollowWaitsForTheFirstAttempt: following a task that has not started
// streams its first attempt once it runs; a task that ends without running
// (skipped) ends the stream empty.
func TestFollowWaitsForTheFirstAttempt(t *testing.T) {
	f := newFixture(t)
	g := newGate(t)
	f.put(`name: chain
tasks:
  a: {command: 'cat ` + g.path + `'}
  b: {command: 'echo from b', depends_on: [a]}
  c: {command: 'exit 1', depends_on: [b]}
  d: {command: 'echo never', depends_on: [c]}
`)
	id := f.trigger("chain")
	b := f.follow("/runs/" + id + "/tasks/b/logs?follow=1")
	d := f.follow("/runs/" + id + "/tasks/d/logs?follow=1")
	if b.resp.StatusCode != 200 || d.resp.StatusCode != 200 {
		t.Fatalf("follow: %d %d", b.resp.StatusCode, d.resp.StatusCode)
	}
	if ts := f.tasks(id); ts["b"].Attempt != 0 {
		t.Fatalf("b started before a ended: %+v", ts["b"])
	}
	g.open("")
	if rest, end := b.rest(); rest != "from b\n" || end != FollowEndAttempt {
		t.Fatalf("b: %q %q", rest, end)
	}
	if rest, end := d.rest(); rest != "" || end != FollowEndAttempt {
		t.Fatalf("d (skipped): %q %q", rest, end)
	}
	if ts := f.tasks(id); ts["d"].Status != "skipped" {
		t.Fatalf("d is %s", ts["d"].Status)
	}
}

// TestFollowOutlivesServerTimeouts: a stream longer than the server's read
// and write timeouts is not cut (the write deadline is extended per write).
func TestFollowOutlivesServerTimeouts(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewUnstartedServer(f.api)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	f.srv = srv
	g := newGate(t)
	f.put("name: talk\ntasks:\n  t: {command: 'echo first; cat " + g.path + "; echo last'}\n")
	id := f.trigger("talk")
	s := f.follow("/runs/" + id + "/tasks/t/logs?follow=1")
	if l := s.line(); l != "first\n" {
		t.Fatalf("first line %q", l)
	}
	// Not a synchronization: the point is to outlast both timeouts.
	time.Sleep(3 * srv.Config.WriteTimeout)
	g.open("")
	if rest, end := s.rest(); rest != "last\n" || end != FollowEndAttempt {
		t.Fatalf("after the timeouts: %q %q", rest, end)
	}
}

// TestFollowersAreBounded: one stream more than the limit is a JSON 429
// with Retry-After; the slot is free again once a stream ends.
func TestFollowersAreBounded(t *testing.T) {
	f := newFixture(t, WithMaxFollowers(1))
	g := newGate(t)
	f.put("name: wait\ntasks:\n  t: {command: 'cat " + g.path + "; echo done'}\n")
	id := f.trigger("wait")
	path := "/runs/" + id + "/tasks/t/logs?follow=1"
	first := f.follow(path) // holds the one slot once its headers came
	if first.resp.StatusCode != 200 {
		t.Fatalf("first follower: %d", first.resp.StatusCode)
	}
	code, body := f.do("GET", path, "")
	if code != 429 || !strings.Contains(body, "too many log followers") || !strings.Contains(body, `"error"`) {
		t.Fatalf("second follower: %d %s", code, body)
	}
	if _, m := f.do("GET", "/metrics", ""); !strings.Contains(m, "\norkwal_log_followers 1\n") || !strings.Contains(m, "\norkwal_log_followers_max 1\n") {
		t.Fatalf("metrics with one follower:\n%s", m)
	}
	// Reading without follow is not limited.
	if code, _ := f.do("GET", "/runs/"+id+"/tasks/t/logs", ""); code != 200 {
		t.Fatalf("plain read while the slot is taken: %d", code)
	}
	g.open("")
	if rest, end := first.rest(); rest != "done\n" || end != FollowEndAttempt {
		t.Fatalf("first: %q %q", rest, end)
	}
	if rest, end := f.follow(path).rest(); rest != "done\n" || end != FollowEndAttempt {
		t.Fatalf("a follower after the first ended: %q %q", rest, end)
	}
}

// TestStopStreamsEndsFollowers: StopStreams (on server shutdown) ends every
// stream with the daemon-stopping trailer, and refuses new ones likewise.
func TestStopStreamsEndsFollowers(t *testing.T) {
	f := newFixture(t)
	g := newGate(t)
	defer g.open("")
	f.put("name: wait\ntasks:\n  t: {command: 'echo started; cat " + g.path + "'}\n")
	id := f.trigger("wait")
	s := f.follow("/runs/" + id + "/tasks/t/logs?follow=1")
	if l := s.line(); l != "started\n" {
		t.Fatalf("first line %q", l)
	}
	f.api.StopStreams()
	if rest, end := s.rest(); rest != "" || end != FollowEndStopping {
		t.Fatalf("after StopStreams: %q %q", rest, end)
	}
	if rest, end := f.follow("/runs/" + id + "/tasks/t/logs?follow=1").rest(); rest != "started\n" || end != FollowEndStopping {
		t.Fatalf("a new follower after StopStreams: %q %q", rest, end)
	}
}

func TestFollowFanOutNodeIs404(t *testing.T) {
	f := newFixture(t)
	f.put("name: fan\ntasks:\n  each: {command: 'echo $ORKWAL_PARALLEL_INDEX', parallel: 2}\n")
	id := f.trigger("fan")
	code, body := f.do("GET", "/runs/"+id+"/tasks/each/logs?follow=1", "")
	if code != 404 || !strings.Contains(body, "fans out") {
		t.Fatalf("follow of a fan-out: %d %s", code, body)
	}
	f.waitRun(id)
	if rest, end := f.follow("/runs/" + id + "/tasks/each[1]/logs?follow=1").rest(); rest != "1\n" || end != FollowEndAttempt {
		t.Fatalf("an instance: %q %q", rest, end)
	}
}
