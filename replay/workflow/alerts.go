package workflow

import (
	"fmt"
	"net/mail"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Alert events: what a target may be told about (its `on` list).
const (
	EventFailure   = "failure"   // a run ended failed
	EventSuccess   = "success"   // a run ended successfully
	EventRetry     = "retry"     // an attempt failed and will be retried
	EventSLA       = "sla"       // a run still not finished after the workflow's sla
	EventCancelled = "cancelled" // a run ended cancelled
)

var alertEvents = map[string]string{EventFailure: EventFailure, EventSuccess: EventSuccess,
	EventRetry: EventRetry, EventSLA: EventSLA, EventCancelled: EventCancelled}

// Alert is one target of a workflow's (or the daemon's) `alerts` list:
// exactly one of Webhook, Slack and Email is set. URLs may read the
// daemon's environment (${env:NAME}); Secret and Email.Password must be a
// single ${env:NAME}: the secret itself is read when a delivery is sent,
// never stored.
type Alert struct {
	On      []string `msgpack:"on" json:"on"`
	Webhook string   `msgpack:"webhook,omitempty" json:"webhook,omitempty"`
	Secret  string   `msgpack:"secret,omitempty" json:"secret,omitempty"` // ${env:NAME}: HMAC key of X-Orkwal-Signature
	Slack   string   `msgpack:"slack,omitempty" json:"slack,omitempty"`
	Email   *Email   `msgpack:"email,omitempty" json:"email,omitempty"`
}

// Email is an SMTP target. Port defaults to 587; STARTTLS is required
// unless NoStartTLS (starttls: false, for a relay on the same host).
type Email struct {
	To         []string `msgpack:"to" json:"to"`
	From       string   `msgpack:"from,omitempty" json:"from,omitempty"` // default orkwal@<host name>
	Host       string   `msgpack:"host" json:"host"`
	Port       int      `msgpack:"port,omitempty" json:"port,omitempty"`
	NoStartTLS bool     `msgpack:"no_starttls,omitempty" json:"no_starttls,omitempty"`
	User       string   `msgpack:"user,omitempty" json:"user,omitempty"`
	Password   string   `msgpack:"password,omitempty" json:"password,omitempty"` // ${env:NAME}
}

// Wants reports whether the target is told about event.
func (a *Alert) Wants(event string) bool {
	for _, e := range a.On {
		if e == event {
			return true
		}
	}
	return false
}

// Kind is "webhook", "slack" or "email".
func (a *Alert) Kind() string {
	switch {
	case a.Webhook != "":
		return "webhook"
	case a.Slack != "":
		return "slack"
	default:
		return "email"
	}
}

// Describe names the target without anything secret: the kind and the
// host of a URL as written (a ${env:NAME} URL shows as the reference), or
// the recipients of an email.
func (a *Alert) Describe() string {
	switch a.Kind() {
	case "webhook":
		return "webhook " + urlHost(a.Webhook)
	case "slack":
		return "slack " + urlHost(a.Slack)
	default:
		return "email " + strings.Join(a.Email.To, ",")
	}
}

// Key identifies the target (without its `on` list): throttling is per key.
func (a *Alert) Key() string {
	switch a.Kind() {
	case "webhook":
		return "webhook " + a.Webhook
	case "slack":
		return "slack " + a.Slack
	default:
		return fmt.Sprintf("email %s %s:%d %s", strings.Join(a.Email.To, ","), a.Email.Host, a.Email.Port, a.Email.User)
	}
}

func urlHost(u string) string {
	rest, ok := strings.CutPrefix(u, "https://")
	if !ok {
		rest, _ = strings.CutPrefix(u, "http://")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 { // user:password@host
		rest = rest[i+1:]
	}
	return rest
}

// ParseAlerts reads a file of daemon-wide alerts: a mapping with one key,
// `alerts`, whose list has the workflow key's format.
func ParseAlerts(filename string, data []byte) ([]*Alert, error) {
	p := &parser{file: filename}
	root, err := p.document(data)
	if err != nil {
		return nil, err
	}
	entries, err := p.mapping(root, "", "a mapping with the key alerts")
	if err != nil {
		return nil, err
	}
	var out []*Alert
	for _, e := range entries {
		if e.key != "alerts" {
			return nil, p.fail(e.keyN, e.path, "unknown key (a daemon alerts file holds only alerts)")
		}
		if out, err = p.alerts(e.val, e.path); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// alerts decodes an `alerts` list.
func (p *parser) alerts(n *yaml.Node, path string) ([]*Alert, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.fail(n, path, "expected a list of alert targets, got %s", describe(n))
	}
	out := make([]*Alert, 0, len(n.Content))
	for i, item := range n.Content {
		a, err := p.alert(resolve(item), indexPath(path, i))
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (p *parser) alert(n *yaml.Node, path string) (*Alert, error) {
	entries, err := p.mapping(n, path, "an alert target ({on: [...], webhook: URL}, {on: [...], slack: URL} or {on: [...], email: {...}})")
	if err != nil {
		return nil, err
	}
	a := &Alert{}
	for _, e := range entries {
		switch e.key {
		case "on":
			a.On, err = p.events(e.val, e.path)
		case "webhook":
			a.Webhook, err = p.alertURL(e.val, e.path)
		case "slack":
			a.Slack, err = p.alertURL(e.val, e.path)
		case "secret":
			a.Secret, err = p.envRef(e.val, e.path)
		case "email":
			a.Email, err = p.email(e.val, e.path)
		default:
			err = p.fail(e.keyN, e.path, "unknown key (an alert target has on, webhook, secret, slack or email)")
		}
		if err != nil {
			return nil, err
		}
	}
	return a, p.checkAlert(a, n, path)
}

func (p *parser) checkAlert(a *Alert, n *yaml.Node, path string) error {
	targets := 0
	for _, set := range []bool{a.Webhook != "", a.Slack != "", a.Email != nil} {
		if set {
			targets++
		}
	}
	switch {
	case len(a.On) == 0:
		return p.fail(n, joinPath(path, "on"), "required: a list of events (failure, success, retry, sla, cancelled)")
	case targets != 1:
		return p.fail(n, path, "exactly one of webhook, slack and email is required, got %d", targets)
	case a.Secret != "" && a.Webhook == "":
		return p.fail(n, joinPath(path, "secret"), "applies only to a webhook")
	}
	return nil
}

func (p *parser) events(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		ev, err := p.choice(n, path, alertEvents)
		return []string{ev}, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.fail(n, path, "expected a list of events, got %s", describe(n))
	}
	var out []string
	for i, item := range n.Content {
		ev, err := p.choice(resolve(item), indexPath(path, i), alertEvents)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// alertURL decodes a webhook or Slack URL: http(s), or read from the
// environment (${env:NAME}, checked when it is sent).
func (p *parser) alertURL(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	if err := p.envRefs(n, path, s); err != nil {
		return "", err
	}
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "${env:") {
		return "", p.fail(n, path, "must be an http:// or https:// URL, or ${env:NAME}, got %q", s)
	}
	return s, nil
}

// envRefs checks the ${...} references of a template that may only read
// the environment.
func (p *parser) envRefs(n *yaml.Node, path, s string) error {
	var err error
	scanTemplate(s, func(kind tokenKind, text string) {
		if name, ok := strings.CutPrefix(text, "env:"); err == nil && kind == tokEnvRef && (!ok || !validEnvName(name)) {
			err = p.fail(n, path, "${%s}: use ${env:NAME} to read NAME from the daemon's environment ($${ for a literal ${)", text)
		}
	})
	return err
}

// envRef decodes a secret: exactly one ${env:NAME}, so that the secret is
// never written in a file, the log or the API.
func (p *parser) envRef(n *yaml.Node, path string) (string, error) {
	s, err := p.str(n, path)
	if err != nil {
		return "", err
	}
	name, ok := strings.CutPrefix(s, "${env:")
	name, closed := strings.CutSuffix(name, "}")
	if !ok || !closed || !validEnvName(name) {
		return "", p.fail(n, path, "must be ${env:NAME}: a secret is read from the daemon's environment, never written in the file")
	}
	return s, nil
}

// SecretEnv returns the variable a secret reference names ("" for none).
func SecretEnv(ref string) string {
	name, _ := strings.CutPrefix(ref, "${env:")
	name, _ = strings.CutSuffix(name, "}")
	return name
}

func (p *parser) email(n *yaml.Node, path string) (*Email, error) {
	entries, err := p.mapping(n, path, "a mapping with to, host, port, user, password")
	if err != nil {
		return nil, err
	}
	m := &Email{}
	for _, e := range entries {
		switch e.key {
		case "to":
			m.To, err = p.addresses(e.val, e.path)
		case "from":
			if m.From, err = p.str(e.val, e.path); err == nil {
				err = p.address(e.val, e.path, m.From)
			}
		case "host":
			m.Host, err = p.str(e.val, e.path)
		case "port":
			m.Port, err = p.intIn(e.val, e.path, 1, 65535)
		case "starttls":
			var on bool
			if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!bool" || e.val.Decode(&on) != nil {
				return nil, p.fail(e.val, e.path, "expected true or false, got %s", describe(e.val))
			}
			m.NoStartTLS = !on
		case "user":
			m.User, err = p.str(e.val, e.path)
		case "password":
			m.Password, err = p.envRef(e.val, e.path)
		default:
			err = p.fail(e.keyN, e.path, "unknown key (an email target has to, from, host, port, starttls, user, password)")
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case len(m.To) == 0:
		return nil, p.fail(n, joinPath(path, "to"), "required: a list of addresses")
	case m.Host == "":
		return nil, p.fail(n, joinPath(path, "host"), "required: the SMTP server")
	case m.Password != "" && m.User == "":
		return nil, p.fail(n, joinPath(path, "user"), "required with a password")
	}
	if m.Port == 0 {
		m.Port = 587
	}
	return m, nil
}

func (p *parser) addresses(n *yaml.Node, path string) ([]string, error) {
	if n.Kind == yaml.ScalarNode {
		s, err := p.str(n, path)
		if err == nil {
			err = p.address(n, path, s)
		}
		return []string{s}, err
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.fail(n, path, "expected a list of addresses, got %s", describe(n))
	}
	var out []string
	for i, item := range n.Content {
		s, err := p.str(resolve(item), indexPath(path, i))
		if err == nil {
			err = p.address(item, indexPath(path, i), s)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) address(n *yaml.Node, path, s string) error {
	if _, err := mail.ParseAddress(s); err != nil || strings.ContainsAny(s, "\r\n") {
		return p.fail(n, path, "not an email address: %q", s)
	}
	return nil
}
