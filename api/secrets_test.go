package api

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNeverReachTheWALOrLogs: ${env:NAME} values are resolved at
// dispatch; the WAL keeps the template, and no log holds the value.
func TestSecretsNeverReachTheWALOrLogs(t *testing.T) {
	const secret = "s3cr3t-7f1d9a"
	t.Setenv("API_TOKEN", secret)
	t.Setenv("EXPECTED_TOKEN", secret) // inherited by the task, to check what it got
	var gotAuth string
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Write([]byte(`{"ok": true}`))
	}))
	defer remote.Close()
	f := newFixture(t)
	f.put(`name: secret
tasks:
  use:
    command: 'test "$TOKEN" = "$EXPECTED_TOKEN" && echo token received'
    env: {TOKEN: "${env:API_TOKEN}"}
  call:
    executor: http
    url: "` + remote.URL + `/x"
    headers: {Authorization: "Bearer ${env:API_TOKEN}"}
`)
	if run := f.waitRun(f.trigger("secret")); run.Status != "success" {
		t.Fatalf("run %s: %+v", run.Status, run.Tasks)
	}
	if gotAuth != "Bearer "+secret {
		t.Fatalf("the http task sent %q", gotAuth)
	}
	filepath.Walk(f.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret in clear", path)
		}
		return nil
	})
}
