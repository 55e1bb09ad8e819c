package executors

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// elsewhere is srv's URL with "localhost" for "127.0.0.1": another host
// for the rules of headersMayGo, the same server.
func elsewhere(rawURL string) string { return strings.Replace(rawURL, "127.0.0.1", "localhost", 1) }

// TestHTTPAsyncStatusURLElsewhereRefused: a start response naming a status
// URL on another host fails the task before any poll: the polls would
// carry the job's headers (its credentials) wherever the remote end says.
func TestHTTPAsyncStatusURLElsewhereRefused(t *testing.T) {
	t.Parallel()
	var stolen atomic.Value
	thief := serve(t, func(w http.ResponseWriter, r *http.Request) {
		stolen.Store(r.Header.Get("Authorization"))
		io.WriteString(w, `{"result": {"state": "SUCCEEDED"}}`)
	})
	start := serve(t, reply(200, fmt.Sprintf(`{"links": {"status": %q}}`, elsewhere(thief.URL)+"/status")))
	job := asyncJob(t, start)
	job.HTTP.Async.StatusURL, job.HTTP.Async.IDField = "", ""
	job.HTTP.Async.StatusURLField = "links.status"
	_, events := startHTTP(t, NewHTTP(HTTPConfig{}), job)
	expectHTTPFailed(t, expectFinished(t, job, events), "the task's headers are not sent there")
	if v := stolen.Load(); v != nil {
		t.Fatalf("the other host was polled with Authorization %q", v)
	}
}

// TestHTTPRedirectElsewhereDropsHeaders: a redirect to another host gets
// none of the job's headers (net/http alone would forward X-Api-Key); one
// to the same host keeps them.
func TestHTTPRedirectElsewhereDropsHeaders(t *testing.T) {
	t.Parallel()
	got := make(chan http.Header, 2)
	target := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		io.WriteString(w, `{}`)
	})
	for _, c := range []struct {
		name, to string
		keep     bool
	}{
		{"another host", elsewhere(target.URL) + "/x", false},
		{"the same host", target.URL + "/x", true},
	} {
		from := serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, c.to, http.StatusFound) })
		job := newHTTPJob(t, HTTPJob{URL: from.URL, // 127.0.0.1
			Headers: map[string]string{"X-Api-Key": "k3y", "Authorization": "Bearer tok"}})
		if fin := runHTTP(t, job); !fin.OK {
			t.Fatalf("%s: %+v", c.name, fin)
		}
		h := <-got
		if kept := h.Get("X-Api-Key") != "" || h.Get("Authorization") != ""; kept != c.keep {
			t.Errorf("%s: headers kept %v (X-Api-Key %q, Authorization %q), want %v",
				c.name, kept, h.Get("X-Api-Key"), h.Get("Authorization"), c.keep)
		}
	}
}

func TestHeadersMayGo(t *testing.T) {
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"https://api.example.com/a", "https://api.example.com/b", true},
		{"https://api.example.com/a", "https://API.example.com:8443/b", true},
		{"https://example.com/a", "https://ops.example.com/b", true},
		{"http://example.com/a", "https://example.com/b", true},
		{"https://api.example.com/a", "https://example.com/b", false},
		{"https://example.com/a", "https://evilexample.com/b", false},
		{"https://example.com/a", "http://example.com/b", false},
		{"http://10.0.0.1/a", "http://10.0.0.1:9/b", true},
		{"http://1.0.0.1/a", "http://x.1.0.0.1/b", false},
		{"http://127.0.0.1/a", "http://169.254.169.254/b", false},
	} {
		from, _ := url.Parse(c.from)
		to, _ := url.Parse(c.to)
		if got := headersMayGo(from, to); got != c.want {
			t.Errorf("headersMayGo(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
