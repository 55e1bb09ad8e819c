package api

import (
	"io"
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

// TestParamsCannotReadTheDaemonsEnvironment: a template is filled in one
// pass, so a param (set by whoever may trigger) or an input (a task's
// output) holding "${env:NAME}" reaches the task as that text: it cannot
// make a task send the daemon's secrets. The escapes give literal text.
func TestParamsCannotReadTheDaemonsEnvironment(t *testing.T) {
	const secret = "s3cr3t-0b2c44"
	t.Setenv("API_TOKEN", secret)
	var gotBody string
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
	}))
	defer remote.Close()
	f := newFixture(t)
	f.put(`name: leak
params: {note: ""}
tasks:
  up: {command: 'printf "\"\${env:API_TOKEN}\"" > "$ORKWAL_OUTPUT"'}
  say:
    depends_on: [up]
    inputs: {u: {ref: tasks.up.output}}
    env: {NOTE: '{{params.note}} {{inputs.u}} {{ "{{" }}x}} $${HOME}'}
    command: 'printf "%s" "$NOTE"'
  call:
    executor: http
    method: POST
    url: "` + remote.URL + `/x"
    body: 'note={{params.note}}'
`)
	id := f.triggerWith("leak", `{"params": {"note": "${env:API_TOKEN}"}}`)
	if run := f.waitRun(id); run.Status != "success" {
		t.Fatalf("run %s: %+v", run.Status, run.Tasks)
	}
	if want := "note=${env:API_TOKEN}"; gotBody != want {
		t.Errorf("the http task sent %q, want %q", gotBody, want)
	}
	want := "${env:API_TOKEN} ${env:API_TOKEN} {{x}} ${HOME}"
	if _, log := f.do("GET", "/runs/"+id+"/tasks/say/logs", ""); log != want {
		t.Errorf("the task saw NOTE=%q, want %q", log, want)
	}
}
