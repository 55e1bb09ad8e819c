package api

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestUIAssetsSmallAndSelfContained: the page's files, gzipped, stay under
// 300 KB and name no other host (no URL at all): it works offline.
func TestUIAssetsSmallAndSelfContained(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	files := 0
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|url\(\s*['"]?[^#'"\s]`)
	err := fs.WalkDir(uiAssets, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(uiAssets, path)
		if err != nil {
			return err
		}
		files++
		zw.Write(b)
		if m := url.Find(b); m != nil {
			t.Errorf("%s names %q: the page must load nothing from elsewhere", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if files < 3 || zipped.Len() > 300<<10 {
		t.Fatalf("%d files, %d bytes gzipped: want the page, under 300 KB", files, zipped.Len())
	}
	t.Logf("%d files, %d bytes gzipped", files, zipped.Len())
}

// TestUIPagesAndSession: / redirects to /ui/; every page's URL serves the
// page without the token (it asks for it), under a CSP that allows only
// its own files; /ui/login with the token sets an HttpOnly, SameSite=Strict
// session cookie that authorizes the API (never the token itself), a wrong
// token is a clear 401, and a cross-origin write with the cookie is still
// refused.
func TestUIPagesAndSession(t *testing.T) {
	f := newFixture(t, WithToken(testToken))
	f.token = testToken
	f.do("POST", "/workflows", dag)
	id := f.triggerWith("dag", `{}`)
	f.token = ""
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(f.srv.URL + "/")
	if err != nil || resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	for _, p := range []string{"/ui/", "/ui/runs?workflow=dag&status=failed", "/ui/runs?workflow=dag&cursor=" + id, "/ui/runs/" + id, "/ui/workflows/dag", "/ui/workflows/dag?version=1", "/ui/assets/app.js", "/ui/assets/style.css"} {
		resp, err := http.Get(f.srv.URL + p)
		if err != nil || resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %s without the token: %v %v", p, resp, err)
		}
		body := new(bytes.Buffer)
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if strings.Contains(body.String(), `id="initial-run"`) {
			t.Fatalf("%s: the run is in the page of a request without the token", p)
		}
	}
	f.token = testToken
	if code, _ := f.do("GET", "/ui/nope", ""); code != 404 {
		t.Fatalf("an unknown page: %d", code)
	}
	f.token = ""
	if code, body := f.do("POST", "/ui/login", `{"token": "wrong"}`); code != 401 || !strings.Contains(body, "wrong token") {
		t.Fatalf("wrong token: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+"/ui/login", strings.NewReader(`{"token": "`+testToken+`"}`))
	resp = f.send(req)
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			session = c
		}
	}
	if resp.StatusCode != 200 || session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode ||
		session.Path != "/" || strings.Contains(session.Value, testToken) {
		t.Fatalf("login: %d %+v", resp.StatusCode, session)
	}
	with := func(method, path string, header map[string]string) int {
		req, _ := http.NewRequest(method, f.srv.URL+path, nil)
		req.AddCookie(session)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp := f.send(req)
		body := new(bytes.Buffer)
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if path == "/ui/runs/"+id && !strings.Contains(body.String(), `id="initial-run"`) {
			t.Fatalf("the run page of a session lacks the run")
		}
		return resp.StatusCode
	}
	if code := with("GET", "/runs", nil); code != 200 {
		t.Fatalf("GET /runs with the session: %d", code)
	}
	with("GET", "/ui/runs/"+id, nil)
	if code := with("POST", "/workflows/dag/runs", map[string]string{"Sec-Fetch-Site": "cross-site"}); code != 403 {
		t.Fatalf("a cross-origin write with the session: %d, want 403", code)
	}
	if code := with("POST", "/workflows/dag/runs", map[string]string{"Sec-Fetch-Site": "same-origin"}); code != 201 {
		t.Fatalf("a same-origin write with the session: %d, want 201", code)
	}
	session.Value = strings.Repeat("0", len(session.Value))
	if code := with("GET", "/runs", nil); code != 401 {
		t.Fatalf("GET /runs with a forged session: %d", code)
	}
}

// TestUIFileReadOnce: an asset is served as embedded, with the ETag of
// its bytes, and a request does not read and hash the file again: 200
// revalidations (304) allocate far less than the file each (they read a
// copy of it and hashed it each, before).
func TestUIFileReadOnce(t *testing.T) {
	f := newFixture(t)
	want, err := fs.ReadFile(uiAssets, "app.js")
	if err != nil || len(want) < 16<<10 {
		t.Fatalf("app.js: %d bytes, %v", len(want), err)
	}
	get := func(etag string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/ui/assets/app.js", nil)
		r.Host = "127.0.0.1" // a local name (DNS rebinding defence)
		r.Header.Set("If-None-Match", etag)
		w := httptest.NewRecorder()
		f.api.ServeHTTP(w, r)
		return w
	}
	first := get("")
	sum := sha256.Sum256(want)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	if first.Code != 200 || first.Body.String() != string(want) || first.Header().Get("ETag") != etag {
		t.Fatalf("app.js: %d, ETag %s (want %s), %d bytes (want %d)", first.Code, first.Header().Get("ETag"), etag, first.Body.Len(), len(want))
	}
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if w := get(etag); w.Code != 304 {
			t.Fatalf("revalidation: %d", w.Code)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > uint64(len(want))/4 {
		t.Fatalf("a revalidation allocated %d bytes, app.js is %d", per, len(want))
	}
}
