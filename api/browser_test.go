package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// browserRequest sends what a browser would: host names the Host header
// ("" keeps the server's address), header adds the browser's own headers.
func (f *fixture) browserRequest(method, path, host, body string, header map[string]string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp := f.send(req)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebPagesCannotDriveTheAPI: a page the operator visits cannot make
// the daemon run a command. Without preflight it can POST a text/plain
// body or a form to 127.0.0.1 (cross-origin), and through DNS rebinding it
// can send same-origin requests with its own host name: all are 403 and
// write nothing. Programs (no Origin, no Sec-Fetch-Site) and same-origin
// requests to the address are served as before.
func TestWebPagesCannotDriveTheAPI(t *testing.T) {
	f := newFixture(t)
	f.put("name: w\ntasks:\n  t: {executor: noop}\n")
	evil := "name: evil\ntasks:\n  t: {command: \"touch /tmp/pwned\"}\n"
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	before := f.walFrames()
	for _, c := range []struct {
		name, method, path, host, body string
		header                         map[string]string
	}{
		{"fetch no-cors text/plain", "POST", "/workflows", "", evil,
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"form post, Origin only", "POST", "/workflows/w/runs", "", "a=b",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}},
		{"null origin", "POST", "/workflows/w/runs", "", "", map[string]string{"Origin": "null"}},
		{"same-site other port", "POST", "/workflows/w/schedule/pause", "", "",
			map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"rebinding read", "GET", "/runs", "evil.example:" + strings.Split(addr, ":")[1], "", nil},
		{"rebinding write", "POST", "/workflows", "evil.example", evil,
			map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}},
		{"rebinding healthz", "GET", "/healthz", "evil.example", "", nil},
	} {
		code, body := f.browserRequest(c.method, c.path, c.host, c.body, c.header)
		if code != http.StatusForbidden || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want a JSON 403", c.name, code, body)
		}
	}
	if got := f.walFrames(); got != before {
		t.Fatalf("refused requests wrote %d frames", got-before)
	}
	for _, c := range []struct {
		name, host string
		header     map[string]string
	}{
		{"a program", "", nil},
		{"same origin", "", map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"}},
		{"typed in the address bar", "", map[string]string{"Sec-Fetch-Site": "none"}},
		{"localhost", "localhost:7777", nil},
		{"a .localhost name", "orkwal.localhost", nil},
		{"ipv6 loopback", "[::1]:7777", nil},
		{"another address", "192.0.2.7:7777", nil},
	} {
		if code, body := f.browserRequest("POST", "/workflows/w/runs", c.host, "", c.header); code != http.StatusCreated {
			t.Errorf("%s: %d %s, want 201", c.name, code, body)
		}
	}
}

// TestTokenServesAnyHost: with a token a page cannot authenticate, so a
// host name is served (an edge box reached by its name).
func TestTokenServesAnyHost(t *testing.T) {
	f := newFixture(t, WithToken("s3cret"))
	f.token = "s3cret"
	if code, body := f.browserRequest("GET", "/workflows", "edge-box.lan:7777", "", nil); code != http.StatusOK {
		t.Fatalf("host name with the token: %d %s", code, body)
	}
	code, body := f.browserRequest("POST", "/workflows", "edge-box.lan:7777", "name: w\ntasks:\n  t: {executor: noop}\n",
		map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	if code != http.StatusForbidden {
		t.Fatalf("cross-site write with the token: %d %s, want 403", code, body)
	}
}
