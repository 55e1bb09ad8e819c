package workflow

import (
	"strings"
	"testing"
	"time"
)

const alertsWorkflow = `name: x
sla: 30m
alerts:
  - {on: [failure, retry], webhook: "https://h.example/hook", secret: "${env:HOOK_SECRET}"}
  - {on: failure, slack: "${env:SLACK_URL}"}
  - on: [sla, cancelled]
    email: {to: [ops@example.com], host: smtp.example.com, user: u, password: "${env:SMTP_PASSWORD}"}
tasks:
  a: {command: "true"}
`

func TestAlertsParse(t *testing.T) {
	spec, err := Parse("x.yaml", []byte(alertsWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if spec.SLA != 30*time.Minute || len(spec.Alerts) != 3 {
		t.Fatalf("sla %v, %d alerts", spec.SLA, len(spec.Alerts))
	}
	a, s, m := spec.Alerts[0], spec.Alerts[1], spec.Alerts[2]
	if a.Webhook != "https://h.example/hook" || a.Secret != "${env:HOOK_SECRET}" || !a.Wants(EventRetry) || a.Wants(EventSuccess) {
		t.Errorf("webhook: %+v", a)
	}
	if s.Slack != "${env:SLACK_URL}" || s.Describe() != "slack ${env:SLACK_URL}" {
		t.Errorf("slack: %+v %q", s, s.Describe())
	}
	if m.Email.Port != 587 || m.Email.NoStartTLS || m.Email.Password != "${env:SMTP_PASSWORD}" || !m.Wants(EventSLA) {
		t.Errorf("email: %+v", m.Email)
	}
	if SecretEnv(a.Secret) != "HOOK_SECRET" {
		t.Errorf("SecretEnv = %q", SecretEnv(a.Secret))
	}
}

// Every bad alert is refused naming its key and the reason; a secret
// written in the file is refused so that it never reaches the WAL.
func TestAlertsRefused(t *testing.T) {
	for _, row := range []struct{ alerts, want string }{
		{`[{on: [failure], webhook: "https://h/x", secret: hunter2}]`, "alerts[0].secret: must be ${env:NAME}"},
		{`[{on: [failure], email: {to: [a@b.c], host: h, user: u, password: hunter2}}]`, "alerts[0].email.password: must be ${env:NAME}"},
		{`[{on: [explode], webhook: "https://h/x"}]`, "alerts[0].on[0]: must be one of cancelled, failure, retry, sla, success"},
		{`[{webhook: "https://h/x"}]`, "alerts[0].on: required"},
		{`[{on: [failure]}]`, "alerts[0]: exactly one of webhook, slack and email is required, got 0"},
		{`[{on: [failure], webhook: "https://h/x", slack: "https://h/y"}]`, "exactly one of webhook, slack and email is required, got 2"},
		{`[{on: [failure], webhook: "ftp://h/x"}]`, "alerts[0].webhook: must be an http:// or https:// URL"},
		{`[{on: [failure], webhook: "https://h/${HOME}"}]`, "alerts[0].webhook: ${HOME}: use ${env:NAME}"},
		{`[{on: [failure], slack: "https://h/x", secret: "${env:S}"}]`, "alerts[0].secret: applies only to a webhook"},
		{`[{on: [failure], email: {to: [not an address], host: h}}]`, "alerts[0].email.to[0]: not an email address"},
		{`[{on: [failure], email: {to: [a@b.c]}}]`, "alerts[0].email.host: required"},
		{`[{on: [failure], email: {to: [a@b.c], host: h, starttls: maybe}}]`, "alerts[0].email.starttls: expected true or false"},
		{`[{on: [failure], pager: x}]`, "alerts[0].pager: unknown key"},
		{`{on: [failure]}`, "alerts: expected a list of alert targets"},
	} {
		_, err := Parse("x.yaml", []byte("name: x\nalerts: "+row.alerts+"\ntasks:\n  a: {command: \"true\"}\n"))
		if err == nil || !strings.Contains(err.Error(), row.want) {
			t.Errorf("%s: got %v, want %q", row.alerts, err, row.want)
		}
	}
	if _, err := Parse("x.yaml", []byte("name: x\nsla: -1m\ntasks:\n  a: {command: \"true\"}\n")); err == nil || !strings.Contains(err.Error(), "sla: must be a positive duration") {
		t.Errorf("sla -1m: %v", err)
	}
}

func TestParseAlertsFile(t *testing.T) {
	got, err := ParseAlerts("alerts.yaml", []byte("alerts:\n  - {on: [failure], webhook: \"http://127.0.0.1:9/x\"}\n"))
	if err != nil || len(got) != 1 || got[0].Webhook != "http://127.0.0.1:9/x" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ParseAlerts("alerts.yaml", []byte("alert: []\n")); err == nil || !strings.Contains(err.Error(), "alerts.yaml: alert: unknown key") {
		t.Errorf("bad key: %v", err)
	}
}
