// Package smtptest is a minimal SMTP server on loopback for tests: EHLO,
// STARTTLS (with httptest's certificate, valid for 127.0.0.1), AUTH PLAIN,
// MAIL, RCPT, DATA, QUIT. It keeps every message it accepted. Tests only:
// it is as small as a test needs, not a mail server.
package smtptest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Server is a running test SMTP server.
type Server struct {
	Port      int
	ClientTLS *tls.Config // trusts the server's certificate

	user, pass string // AUTH PLAIN's; "" = no AUTH required
	ln         net.Listener
	https      *httptest.Server
	tlsConfig  *tls.Config
	mu         sync.Mutex
	got        []Message
}

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data string // as sent, dot-unstuffing aside
	TLS  bool   // sent after STARTTLS
}

// New starts a server on a free loopback port; with a user, AUTH PLAIN
// with user and pass is required (after STARTTLS) before MAIL.
func New(user, pass string) (*Server, error) { return NewAt("127.0.0.1:0", user, pass) }

// NewAt starts a server listening on addr.
func NewAt(addr, user, pass string) (*Server, error) {
	https := httptest.NewTLSServer(nil) // for its certificate
	s := &Server{user: user, pass: pass, https: https, tlsConfig: &tls.Config{Certificates: https.TLS.Certificates},
		ClientTLS: https.Client().Transport.(*http.Transport).TLSClientConfig}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		https.Close()
		return nil, err
	}
	s.ln, s.Port = ln, ln.Addr().(*net.TCPAddr).Port
	go s.accept()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	s.ln.Close()
	s.https.Close()
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.got...)
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(c)
	}
}

type session struct {
	c      net.Conn
	r      *bufio.Reader
	m      Message
	authed bool
}

func (ss *session) say(line string) { io.WriteString(ss.c, line+"\r\n") }

func (s *Server) serve(c net.Conn) {
	ss := &session{c: c, r: bufio.NewReader(c), authed: s.user == ""}
	defer func() { ss.c.Close() }()
	ss.say("220 smtptest ESMTP")
	for {
		line, err := ss.r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		if !s.command(ss, cmd, strings.ToUpper(strings.SplitN(cmd, " ", 2)[0])) {
			return
		}
	}
}

// command answers one command; false ends the session.
func (s *Server) command(ss *session, cmd, verb string) bool {
	switch {
	case verb == "EHLO" && ss.m.TLS:
		ss.say("250-smtptest\r\n250 AUTH PLAIN")
	case verb == "EHLO":
		ss.say("250-smtptest\r\n250 STARTTLS")
	case verb == "STARTTLS":
		ss.say("220 go ahead")
		tc := tls.Server(ss.c, s.tlsConfig)
		if tc.Handshake() != nil {
			return false
		}
		ss.c, ss.r, ss.m.TLS = tc, bufio.NewReader(tc), true
	case verb == "AUTH" && ss.m.TLS:
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(cmd, "AUTH PLAIN "))
		if string(raw) != "\x00"+s.user+"\x00"+s.pass {
			ss.say("535 5.7.8 authentication failed")
			return true
		}
		ss.authed = true
		ss.say("235 2.7.0 ok")
	case verb == "MAIL" && ss.authed:
		ss.m.From = cmd
		ss.say("250 ok")
	case verb == "RCPT" && ss.authed:
		ss.m.To = append(ss.m.To, strings.Trim(strings.TrimPrefix(cmd, "RCPT TO:"), "<>"))
		ss.say("250 ok")
	case verb == "DATA" && ss.authed:
		s.data(ss)
	case verb == "QUIT":
		ss.say("221 bye")
		return false
	default:
		ss.say("503 bad sequence: " + verb)
	}
	return true
}

func (s *Server) data(ss *session) {
	ss.say("354 go on")
	var b strings.Builder
	for {
		l, err := ss.r.ReadString('\n')
		if err != nil || l == ".\r\n" {
			break
		}
		b.WriteString(strings.TrimPrefix(l, "."))
	}
	ss.m.Data = b.String()
	s.mu.Lock()
	s.got = append(s.got, ss.m)
	n := len(s.got)
	s.mu.Unlock()
	ss.m.To = nil
	ss.say("250 queued as " + strconv.Itoa(n))
}
