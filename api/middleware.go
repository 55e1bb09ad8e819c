package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Route labels of requests that matched no pattern (for metrics and logs).
const (
	routeInvalid   = "invalid"   // the path was rejected before routing
	routeUnmatched = "unmatched" // 404 or 405
)

// ServeHTTP implements http.Handler: it checks the path, refuses what a
// web page may not send (see browserGuard), finds the route, checks the
// token, then serves the request, recording it in the metrics and
// the access log (debug level).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	route := routeInvalid
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if rec.status == 0 {
				writeError(rec, http.StatusInternalServerError, "internal error")
			}
		}
		s.observe(r, route, rec, time.Since(start))
	}()
	rec.Header().Set("X-Content-Type-Options", "nosniff")
	if msg := badPath(r); msg != "" {
		writeError(rec, http.StatusBadRequest, msg)
		return
	}
	if msg := s.browser.check(r, s.hasToken); msg != "" {
		writeError(rec, http.StatusForbidden, msg)
		return
	}
	route = s.route(r)
	if route != "GET /healthz" && !uiRoutes[route] && !s.authorized(r) {
		s.unauthorized(rec, r)
		return
	}
	if route == routeUnmatched {
		s.noRoute(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// route is the pattern that serves r, or routeUnmatched.
func (s *Server) route(r *http.Request) string {
	_, pattern := s.mux.Handler(r)
	if s.routes[pattern] {
		return pattern
	}
	return routeUnmatched
}

// noRoute answers 405 with Allow when another method has the path, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(context.Background())
		probe.Method = m
		if s.route(probe) != routeUnmatched {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				allowed = append(allowed, http.MethodHead)
			}
		}
	}
	if len(allowed) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
		return
	}
	sort.Strings(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s: use %s",
		r.Method, r.URL.Path, strings.Join(allowed, ", ")))
}

// badPath rejects, before routing, a path with an empty, "." or ".."
// segment, or a segment that decodes to a slash, a backslash or a control
// character (%2f, %5c, %00): no path parameter can then name anything but a
// single safe element. The path parameters are also checked one by one
// (names, run ids).
func badPath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		return fmt.Sprintf("path %q: must start with /", p)
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "" && i == len(segs)-1 {
			break // a trailing slash: left to routing (404)
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Sprintf("path %q: bad escape in segment %d", p, i+1)
		}
		switch {
		case dec == "":
			return fmt.Sprintf("path %q: empty segment", p)
		case dec == "." || dec == "..":
			return fmt.Sprintf("path %q: %q segments are not allowed", p, dec)
		case strings.ContainsAny(dec, "/\\"):
			return fmt.Sprintf("path %q: segment %d contains a slash or backslash", p, i+1)
		}
		for _, c := range []byte(dec) {
			if c < 0x20 || c == 0x7f {
				return fmt.Sprintf("path %q: segment %d contains control character 0x%02x", p, i+1, c)
			}
		}
	}
	return ""
}

// tokenHash is a SHA-256 of a token: comparing hashes in constant time
// reveals neither the token's bytes nor its length.
type tokenHash [sha256.Size]byte

func hashToken(t string) tokenHash { return sha256.Sum256([]byte(t)) }

// bearer is the token of "Authorization: Bearer <token>", or false.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authorized reports whether r may be served: no token is configured, or r
// carries it.
func (s *Server) authorized(r *http.Request) bool {
	if !s.hasToken {
		return true
	}
	tok, ok := bearer(r)
	if !ok {
		return s.sessionOK(r) // the web page's session
	}
	got := hashToken(tok)
	return subtle.ConstantTimeCompare(got[:], s.token[:]) == 1
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if _, ok := bearer(r); ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orkwal", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "unauthorized: the bearer token is not the daemon's")
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="orkwal"`)
	writeError(w, http.StatusUnauthorized,
		`unauthorized: send "Authorization: Bearer <token>" (the CLI sends ORKWAL_TOKEN or --token)`)
}

// recorder keeps the status and size of an answer. Unwrap lets
// http.ResponseController reach the connection (Flush, write deadlines).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.bytes += int64(n)
	return n, err
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// observe records a served request in the metrics and the access log.
func (s *Server) observe(r *http.Request, route string, rec *recorder, d time.Duration) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	s.metrics.request(route, status, d)
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "http request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", route),
			slog.Int("status", status), slog.Int64("bytes", rec.bytes),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000), slog.String("remote", r.RemoteAddr))
	}
}
