package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/orkwal/orkwal/replay/workflow"
)

// webhook POSTs the JSON body, signed when the target has a secret.
func (s *Sender) webhook(ctx context.Context, target *workflow.Alert, msg *Message) (int, error) {
	msg.Body.Timestamp = s.cfg.Now().UTC()
	body, err := json.Marshal(msg.Body)
	if err != nil {
		return 0, fmt.Errorf("%s: encode: %w", target.Describe(), err)
	}
	hdr := http.Header{}
	if target.Secret != "" {
		secret, err := s.env(target.Secret)
		if err != nil {
			return 0, fmt.Errorf("%s: secret: %w", target.Describe(), err)
		}
		hdr.Set("X-Orkwal-Signature", Sign([]byte(secret), body))
	}
	return s.post(ctx, target, target.Webhook, body, hdr, msg.Body.ID, msg.Body.Event)
}

// slack POSTs {"text": ..., "id": ...}: Slack, Mattermost and Rocket.Chat
// show the text and ignore the id.
func (s *Sender) slack(ctx context.Context, target *workflow.Alert, msg *Message) (int, error) {
	body, err := json.Marshal(map[string]string{"text": msg.Text, "id": msg.Body.ID})
	if err != nil {
		return 0, fmt.Errorf("%s: encode: %w", target.Describe(), err)
	}
	return s.post(ctx, target, target.Slack, body, http.Header{}, msg.Body.ID, msg.Body.Event)
}

func (s *Sender) post(ctx context.Context, target *workflow.Alert, rawURL string, body []byte, hdr http.Header, id, event string) (int, error) {
	u, err := s.expand(rawURL)
	if err != nil {
		return 0, fmt.Errorf("%s: url: %w", target.Describe(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%s: bad url: %w", target.Describe(), redact(err))
	}
	req.Header = hdr
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "orkwal-alerts")
	req.Header.Set("X-Orkwal-Alert-Id", id)
	req.Header.Set("Idempotency-Key", id)
	req.Header.Set("X-Orkwal-Event", event)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", target.Describe(), redact(err))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &Error{Code: resp.StatusCode, Msg: fmt.Sprintf("%s: answered %s", target.Describe(), resp.Status)}
	}
	return resp.StatusCode, nil
}

// email sends the message over SMTP: STARTTLS (required unless the
// target says starttls: false), then AUTH PLAIN with the user and the
// password from the environment, if a user is set.
func (s *Sender) email(ctx context.Context, target *workflow.Alert, msg *Message) (int, error) {
	m := target.Email
	fail := func(what string, err error) (int, error) {
		var tp *textproto.Error
		if errors.As(err, &tp) {
			return tp.Code, &Error{Code: tp.Code, Msg: fmt.Sprintf("%s: %s: %d %s", target.Describe(), what, tp.Code, tp.Msg)}
		}
		return 0, fmt.Errorf("%s: %s: %w", target.Describe(), what, err)
	}
	addr := net.JoinHostPort(m.Host, strconv.Itoa(m.Port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fail("connect", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, m.Host)
	if err != nil {
		return fail("greeting", err)
	}
	defer c.Close()
	if err := s.startTLS(c, m); err != nil {
		return fail("starttls", err)
	}
	if m.User != "" {
		password := ""
		if m.Password != "" {
			if password, err = s.env(m.Password); err != nil {
				return fail("password", err)
			}
		}
		if err := c.Auth(smtp.PlainAuth("", m.User, password, m.Host)); err != nil {
			return fail("auth", err)
		}
	}
	return s.transmit(c, target, msg, fail)
}

func (s *Sender) startTLS(c *smtp.Client, m *workflow.Email) error {
	if m.NoStartTLS {
		return nil
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return fmt.Errorf("the server does not offer STARTTLS (starttls: false to send in clear)")
	}
	cfg := &tls.Config{ServerName: m.Host, MinVersion: tls.VersionTLS12}
	if s.cfg.TLS != nil {
		cfg = s.cfg.TLS.Clone()
		cfg.ServerName = m.Host
	}
	return c.StartTLS(cfg)
}

func (s *Sender) transmit(c *smtp.Client, target *workflow.Alert, msg *Message, fail func(string, error) (int, error)) (int, error) {
	m := target.Email
	from := m.From
	if from == "" {
		host, _ := os.Hostname()
		from = "orkwal@" + host
	}
	if err := c.Mail(from); err != nil {
		return fail("MAIL FROM", err)
	}
	for _, to := range m.To {
		if err := c.Rcpt(to); err != nil {
			return fail("RCPT TO "+to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fail("DATA", err)
	}
	if _, err := w.Write(s.mail(from, m.To, msg)); err != nil {
		return fail("DATA", err)
	}
	if err := w.Close(); err != nil {
		return fail("DATA", err)
	}
	c.Quit()
	return 250, nil
}

// mail is the message: headers (the alert id in Message-ID and
// X-Orkwal-Alert-Id), then the text and the JSON body.
func (s *Sender) mail(from string, to []string, msg *Message) []byte {
	msg.Body.Timestamp = s.cfg.Now().UTC()
	body, _ := json.MarshalIndent(msg.Body, "", "  ")
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\n", from, strings.Join(to, ", "),
		oneLine(msg.Subject), msg.Body.Timestamp.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@orkwal>\r\nX-Orkwal-Alert-Id: %s\r\n", oneLine(msg.Body.ID), oneLine(msg.Body.ID))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(msg.Text, "\n", "\r\n"))
	b.WriteString("\r\n\r\n")
	b.WriteString(strings.ReplaceAll(string(body), "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
