package api

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// A web page the operator visits can send requests to the API: its browser
// reaches 127.0.0.1 as well as the daemon's clients do. Two checks keep such
// a page from acting (a workflow is arbitrary commands, so one accepted
// POST /workflows and one trigger are code execution on the box):
//
//   - Cross-origin writes: a page may POST a text/plain body or a form
//     without a preflight, so every request but GET, HEAD and OPTIONS is
//     refused when the browser says it comes from another site
//     (Sec-Fetch-Site, or an Origin not matching Host). The CLI, curl and
//     other programs send neither header and are not affected.
//   - DNS rebinding: a page of evil.example whose name is made to resolve to
//     127.0.0.1 is same-origin with the API as far as the browser knows, and
//     could read and write it. Its requests carry "Host: evil.example": a
//     server without a token answers only requests addressed to an IP
//     address or to localhost. With a token the page cannot authenticate,
//     whatever the host.

// browserGuard holds those checks.
type browserGuard struct {
	cross *http.CrossOriginProtection
}

func newBrowserGuard() browserGuard {
	return browserGuard{cross: http.NewCrossOriginProtection()}
}

// check returns why r is refused ("" when it may be served). anyHost is
// true when a token protects the API.
func (g browserGuard) check(r *http.Request, anyHost bool) string {
	if !anyHost && !localHost(r.Host) {
		return fmt.Sprintf("host %q: without a token the API answers only requests addressed to an IP address "+
			"or localhost (a defence against DNS rebinding); use the address, or set a token", r.Host)
	}
	if err := g.cross.Check(r); err != nil {
		return "cross-origin request refused: a web page may not write to the API (" + err.Error() + ")"
	}
	return ""
}

// localHost reports whether a Host header names an IP address, localhost
// or a name under .localhost (which browsers resolve to loopback
// themselves), with or without a port. An empty Host (HTTP/1.0) passes:
// browsers always send one.
func localHost(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip, _, _ := strings.Cut(host, "%"); net.ParseIP(ip) != nil {
		return true
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}
