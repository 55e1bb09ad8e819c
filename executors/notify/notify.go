// Package notify delivers alerts: a generic webhook (a signed JSON body),
// a Slack-compatible incoming webhook ({"text": ...}) and email over SMTP.
// The engine decides what to send and when (and records every outcome);
// this package only sends one message to one target and says how it went.
//
// Guarantees:
//   - Secrets (a webhook's secret, an SMTP password, a URL that reads the
//     environment) are read from the environment at each send, and never
//     appear in an error: errors name the target by Describe.
//   - Every delivery carries the alert's id: the X-Orkwal-Alert-Id and
//     Idempotency-Key headers and the body's "id" (email: the Message-ID
//     and an X-Orkwal-Alert-Id header), the same on every duplicate.
//   - A send is bounded by Config.Timeout.
package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// Config configures a Sender; zero fields take defaults.
type Config struct {
	Timeout time.Duration       // per send; default 10s
	Getenv  func(string) string // default os.Getenv
	Client  *http.Client        // default: no redirects followed, Timeout
	TLS     *tls.Config         // STARTTLS; default verifies the server's host name
	Now     func() time.Time    // the body's timestamp; default time.Now
}

// Sender sends messages. It is safe for concurrent use.
type Sender struct {
	cfg Config
}

// New returns a Sender.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Sender{cfg: cfg}
}

// Error is a failed send: Code is the HTTP status or SMTP reply code, if
// the target answered one.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Send delivers msg to target once. It returns the target's status code
// (0 if it gave none) and nil, or an error (an *Error when it has a code).
func (s *Sender) Send(ctx context.Context, target *workflow.Alert, msg *Message) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	msg.readTails()
	switch target.Kind() {
	case "webhook":
		return s.webhook(ctx, target, msg)
	case "slack":
		return s.slack(ctx, target, msg)
	default:
		return s.email(ctx, target, msg)
	}
}

// Sign returns the X-Orkwal-Signature of body under secret:
// "sha256=" and the hex HMAC-SHA256 of the raw body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature is body's under secret (constant time).
func Verify(secret, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(signature))
}

// env reads a ${env:NAME} secret; unset is an error naming the variable.
func (s *Sender) env(ref string) (string, error) {
	name := workflow.SecretEnv(ref)
	v := s.cfg.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is not set in the daemon's environment", name)
	}
	return v, nil
}

// expand fills a URL's ${env:NAME} references; an unset one is an error.
func (s *Sender) expand(u string) (string, error) {
	var missing string
	out := workflow.Expand(u, func(string) string { return "" }, func(name string) string {
		v := s.cfg.Getenv(name)
		if v == "" && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("%s is not set in the daemon's environment", missing)
	}
	return out, nil
}

// redact drops what an error of net/http says about the URL (it may hold
// a token), keeping the cause.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
