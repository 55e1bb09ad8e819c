package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orkwal/orkwal/executors/notify/smtptest"
	"github.com/orkwal/orkwal/replay/workflow"
)

func sample() *Message {
	m := &Message{Body: Payload{ID: "r1.failure.x", Event: "failure", Workflow: "etl",
		Run:         &Run{ID: "r1", Status: "failed", URL: "http://127.0.0.1:7777/ui/runs/r1"},
		FailedTasks: []FailedTask{{Name: "load", Attempt: 2, ExitCode: 1, Error: "exit status 1"}}}}
	m.Describe()
	return m
}

func env(vars map[string]string) func(string) string { return func(n string) string { return vars[n] } }

// TestWebhookSigned: the body is the documented JSON with the alert's id
// and a timestamp, its signature verifies with the secret (and not with
// another), the id is in both headers, and the log tail is read.
func TestWebhookSigned(t *testing.T) {
	log := filepath.Join(t.TempDir(), "1.log")
	os.WriteFile(log, []byte(strings.Repeat("x", 5000)+"the last line\n"), 0o600)
	var got *http.Request
	var raw []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, raw = r, must(io.ReadAll(r.Body))
	}))
	defer srv.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := New(Config{Getenv: env(map[string]string{"HOOK_KEY": "k3y"}), Now: func() time.Time { return now }})
	msg := sample()
	msg.Body.FailedTasks[0].LogPath = log
	code, err := s.Send(context.Background(), &workflow.Alert{Webhook: srv.URL + "/x", Secret: "${env:HOOK_KEY}"}, msg)
	if err != nil || code != 200 {
		t.Fatalf("send: %d %v", code, err)
	}
	if !Verify([]byte("k3y"), raw, got.Header.Get("X-Orkwal-Signature")) || Verify([]byte("other"), raw, got.Header.Get("X-Orkwal-Signature")) {
		t.Errorf("signature %q", got.Header.Get("X-Orkwal-Signature"))
	}
	if got.Header.Get("X-Orkwal-Alert-Id") != "r1.failure.x" || got.Header.Get("Idempotency-Key") != "r1.failure.x" {
		t.Errorf("headers %v", got.Header)
	}
	var body Payload
	if err := json.Unmarshal(raw, &body); err != nil || body.ID != "r1.failure.x" || !body.Timestamp.Equal(now) ||
		!strings.HasSuffix(body.FailedTasks[0].LogTail, "the last line\n") || len(body.FailedTasks[0].LogTail) != TailBytes {
		t.Errorf("body %s (%v)", raw, err)
	}
}

// TestSlackText: a Slack target gets {"text": ..., "id": ...}.
func TestSlackText(t *testing.T) {
	var raw []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { raw = must(io.ReadAll(r.Body)) }))
	defer srv.Close()
	if _, err := New(Config{}).Send(context.Background(), &workflow.Alert{Slack: srv.URL}, sample()); err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	json.Unmarshal(raw, &body)
	if !strings.HasPrefix(body["text"], "orkwal: run r1 (etl) failed\n") || body["id"] != "r1.failure.x" || len(body) != 2 {
		t.Errorf("slack body %s", raw)
	}
}

// TestErrorsKeepSecrets: a failed send says why without the URL it read
// from the environment (a token in its path) or the secret.
func TestErrorsKeepSecrets(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }))
	defer srv.Close()
	s := New(Config{Getenv: env(map[string]string{"URL": srv.URL + "/T0KEN", "DEAD": "http://127.0.0.1:1/T0KEN"})})
	code, err := s.Send(context.Background(), &workflow.Alert{Slack: "${env:URL}"}, sample())
	if code != 502 || err == nil || strings.Contains(err.Error(), "T0KEN") {
		t.Errorf("502: %d %v", code, err)
	}
	_, err = s.Send(context.Background(), &workflow.Alert{Slack: "${env:DEAD}"}, sample())
	if err == nil || strings.Contains(err.Error(), "T0KEN") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	_, err = s.Send(context.Background(), &workflow.Alert{Webhook: srv.URL, Secret: "${env:UNSET}"}, sample())
	if err == nil || !strings.Contains(err.Error(), "UNSET is not set") {
		t.Errorf("unset secret: %v", err)
	}
}

// TestEmailOverSTARTTLS sends through an SMTP server in the test: it
// requires STARTTLS before AUTH PLAIN, checks the password read from the
// environment, and keeps the message.
func TestEmailOverSTARTTLS(t *testing.T) {
	smtpd, err := smtptest.New("ops", "pa55")
	if err != nil {
		t.Fatal(err)
	}
	defer smtpd.Close()
	s := New(Config{Getenv: env(map[string]string{"SMTP_PASSWORD": "pa55"}), TLS: smtpd.ClientTLS})
	target := &workflow.Alert{Email: &workflow.Email{To: []string{"oncall@example.com"}, From: "orkwal@example.com",
		Host: "127.0.0.1", Port: smtpd.Port, User: "ops", Password: "${env:SMTP_PASSWORD}"}}
	if code, err := s.Send(context.Background(), target, sample()); err != nil || code != 250 {
		t.Fatalf("send: %d %v", code, err)
	}
	msgs := smtpd.Messages()
	if len(msgs) != 1 || !msgs[0].TLS || msgs[0].To[0] != "oncall@example.com" ||
		!strings.Contains(msgs[0].Data, "X-Orkwal-Alert-Id: r1.failure.x") || !strings.Contains(msgs[0].Data, "Subject: orkwal: run r1 (etl) failed") ||
		!strings.Contains(msgs[0].Data, `"id": "r1.failure.x"`) {
		t.Fatalf("messages: %+v", msgs)
	}
	s = New(Config{Getenv: env(map[string]string{"SMTP_PASSWORD": "wrong"}), TLS: smtpd.ClientTLS})
	if code, err := s.Send(context.Background(), target, sample()); code != 535 || err == nil {
		t.Errorf("wrong password: %d %v", code, err)
	}
}

func must(b []byte, _ error) []byte { return b }
