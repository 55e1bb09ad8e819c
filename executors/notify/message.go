package notify

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one alert as sent. Body is the webhook's JSON (docs/api.md,
// "Alerts"); Subject and Text are what Slack and email show.
type Message struct {
	Body    Payload
	Subject string
	Text    string
	tails   bool // the log tails were read
}

// Payload is the webhook's JSON body. Timestamp is set at each send, so a
// receiver can refuse an old body replayed to it; ID is the alert's, the
// same on every duplicate.
type Payload struct {
	ID          string       `json:"id"`
	Event       string       `json:"event"` // failure, success, retry, sla, cancelled, summary or test
	Timestamp   time.Time    `json:"timestamp"`
	Workflow    string       `json:"workflow,omitempty"`
	Run         *Run         `json:"run,omitempty"`
	Task        string       `json:"task,omitempty"`    // retry: the task
	Attempt     int          `json:"attempt,omitempty"` // retry: the attempt that failed
	Error       string       `json:"error,omitempty"`   // retry: its error
	FailedTasks []FailedTask `json:"failed_tasks,omitempty"`
	Covers      int          `json:"covers,omitempty"` // summary: alerts held back and told here
	Text        string       `json:"text"`
}

// Run is the run an alert is about.
type Run struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Trigger    string     `json:"trigger,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	URL        string     `json:"url,omitempty"` // its page: <daemon>/ui/runs/<id>
}

// FailedTask is a task of the run that failed, with its last error and
// the tail of its last attempt's log.
type FailedTask struct {
	Name     string `json:"name"`
	Attempt  int    `json:"attempt"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error,omitempty"`
	LogTail  string `json:"log_tail,omitempty"`
	LogPath  string `json:"-"` // read at the first send, off the engine's loop
}

// TailBytes is how much of the end of a failed task's log a message holds.
const TailBytes = 2048

// readTails fills the failed tasks' log tails, once.
func (m *Message) readTails() {
	if m.tails {
		return
	}
	m.tails = true
	for i := range m.Body.FailedTasks {
		if ft := &m.Body.FailedTasks[i]; ft.LogPath != "" {
			ft.LogTail = tail(ft.LogPath, TailBytes)
		}
	}
}

// tail returns the last n bytes of a file, starting at a whole UTF-8
// character; "" if it cannot be read.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, n))
	if err != nil {
		return ""
	}
	for off > 0 && len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Describe fills Subject and Text from the body: one line, then the
// failed tasks and the link.
func (m *Message) Describe() {
	p := &m.Body
	switch {
	case p.Event == "summary":
		m.Subject = fmt.Sprintf("orkwal: %d alerts held back", p.Covers)
	case p.Event == "test":
		m.Subject = fmt.Sprintf("orkwal: test alert for workflow %s", p.Workflow)
	case p.Event == "retry":
		m.Subject = fmt.Sprintf("orkwal: %s of run %s (%s) failed attempt %d, retrying", p.Task, p.Run.ID, p.Workflow, p.Attempt)
	case p.Event == "sla":
		m.Subject = fmt.Sprintf("orkwal: run %s (%s) missed its SLA", p.Run.ID, p.Workflow)
	default:
		m.Subject = fmt.Sprintf("orkwal: run %s (%s) %s", p.Run.ID, p.Workflow, p.Run.Status)
	}
	var b strings.Builder
	b.WriteString(m.Subject)
	if p.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", p.Error)
	}
	for _, ft := range p.FailedTasks {
		fmt.Fprintf(&b, "\n%s (attempt %d, exit %d): %s", ft.Name, ft.Attempt, ft.ExitCode, ft.Error)
	}
	if p.Run != nil && p.Run.URL != "" {
		fmt.Fprintf(&b, "\n%s", p.Run.URL)
	}
	fmt.Fprintf(&b, "\nalert %s", p.ID)
	m.Text = b.String()
	p.Text = m.Text
}
