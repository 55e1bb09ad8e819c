package api

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// The web page: a few static files embedded in the binary (api/ui/), served
// under /ui/. Every page (/ui/, /ui/runs, /ui/runs/{id},
// /ui/workflows/{name}) is the same HTML; its script reads the URL and
// draws the page from the JSON API and /events. The files name no other
// host (the Content-Security-Policy forbids it too): the page works
// offline.
//
// With a token, the page asks for it once and POSTs it to /ui/login, which
// answers with a session cookie (HttpOnly, SameSite=Strict) that
// authorizes the API as the bearer token does. The cookie's value is an
// HMAC of the token: it does not reveal the token, stays valid across
// restarts, and every session ends when the token changes. Writes from the
// page still pass the cross-origin checks (browserGuard).

//go:embed ui
var uiFiles embed.FS

// uiAssets is the folder of the page's files.
var uiAssets = func() fs.FS { f, _ := fs.Sub(uiFiles, "ui"); return f }()

// SessionCookie names the page's session cookie.
const SessionCookie = "orkwal_session"

// sessionMaxAge is how long a session cookie is kept by the browser.
const sessionMaxAge = 30 * 24 * time.Hour

// uiCSP keeps the page to its own files: no script, style, font or image
// of another host, no inline script, no framing.
const uiCSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// uiRoutes are served without the token: the page itself holds nothing
// secret, and must load to ask for the token.
var uiRoutes = map[string]bool{
	"GET /{$}": true, "GET /ui/{$}": true, "GET /ui/runs": true, "GET /ui/runs/{id}": true,
	"GET /ui/workflows/{name}": true, "GET /ui/assets/{file}": true, "POST /ui/login": true, "POST /ui/logout": true,
}

func (s *Server) registerUI() {
	s.handle("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	for _, p := range []string{"GET /ui/{$}", "GET /ui/runs", "GET /ui/runs/{id}", "GET /ui/workflows/{name}"} {
		s.handle(p, s.uiPage, "workflow", "status", "since", "cursor", "q", "task", "version")
	}
	s.handle("GET /ui/assets/{file}", s.uiAsset)
	s.handle("POST /ui/login", s.login)
	s.handle("POST /ui/logout", s.logout)
}

func (s *Server) uiPage(w http.ResponseWriter, r *http.Request) {
	if id := r.PathValue("id"); id != "" {
		s.runPage(w, r, id)
		return
	}
	s.serveUIFile(w, r, "index.html", nil)
}

// runPage is the page with the run in it (when the request may read it),
// so that its first draw needs no request: as JSON in a script element of
// type application/json (never run; json.Marshal escapes <, > and &).
func (s *Server) runPage(w http.ResponseWriter, r *http.Request, id string) {
	if checkRunID(id) != nil || !s.authorized(r) {
		s.serveUIFile(w, r, "index.html", nil)
		return
	}
	b := getJSONBuf()
	defer putJSONBuf(b)
	data, err := s.eng.AppendRunSummary(b.compact[:0], id) // the page reads it so: its fan-outs summarised
	if err != nil {
		s.serveUIFile(w, r, "index.html", nil)
		return
	}
	b.compact = data
	s.serveUIFile(w, r, "index.html", func(page []byte) []byte {
		i := bytes.Index(page, []byte("</body>"))
		if i < 0 {
			return page
		}
		b.out.Reset()
		b.out.Write(page[:i])
		b.out.WriteString(`<script type="application/json" id="initial-run">`)
		b.out.Write(data)
		b.out.WriteString("</script>\n</body>")
		b.out.Write(page[i+len("</body>"):])
		return b.out.Bytes()
	})
}

func (s *Server) uiAsset(w http.ResponseWriter, r *http.Request) {
	s.serveUIFile(w, r, r.PathValue("file"), nil)
}

// uiFile is one of the page's files as served, with its ETag.
type uiFile struct {
	body []byte
	etag string
}

// uiServed is the page's files by name, each read and hashed once, on
// first use (not each request).
var uiServed = sync.OnceValue(func() map[string]uiFile {
	m := map[string]uiFile{}
	entries, _ := fs.ReadDir(uiAssets, ".")
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if b, err := fs.ReadFile(uiAssets, e.Name()); err == nil {
			m[e.Name()] = uiFile{body: b, etag: etagOf(b)}
		}
	}
	return m
})

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}

// serveUIFile sends one embedded file, revalidated by its ETag, after
// edit (if not nil) has changed it (a copy: the ETag is then the copy's).
func (s *Server) serveUIFile(w http.ResponseWriter, r *http.Request, name string, edit func([]byte) []byte) {
	f, ok := uiServed()[name]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no file %q in the page's assets", name))
		return
	}
	b, etag := f.body, f.etag
	if edit != nil {
		b = edit(b)
		etag = etagOf(b)
	}
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", etag)
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// session is the value of a valid session cookie: an HMAC of the token.
func (s *Server) session() string {
	m := hmac.New(sha256.New, s.token[:])
	m.Write([]byte("orkwal web session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// sessionOK reports whether r carries a valid session cookie.
func (s *Server) sessionOK(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.session())) == 1
}

// login checks {"token": "..."} and answers with a session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, 4<<10)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, `login: want {"token": "..."}: `+err.Error())
		return
	}
	if !s.hasToken {
		writeJSON(w, http.StatusOK, map[string]bool{"token_required": false})
		return
	}
	got := hashToken(req.Token)
	if subtle.ConstantTimeCompare(got[:], s.token[:]) != 1 {
		writeError(w, http.StatusUnauthorized, "wrong token: it is not the one the daemon was started with (--token or ORKWAL_TOKEN)")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: s.session(), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(sessionMaxAge / time.Second)})
	writeJSON(w, http.StatusOK, map[string]bool{"token_required": true})
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}
