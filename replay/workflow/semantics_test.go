package workflow

import (
	"strings"
	"testing"
	"time"
)

const full = `name: sem
max_active_runs: 2
params: {db: main}
tasks:
  discover:
    command: echo
    retries: 3
    retry_backoff: {initial: 2s, max: 1m, factor: 3}
    timeout: 30
    heartbeat_timeout: 1m
    start_timeout: 5m
    on_interrupt: fail
  process:
    depends_on: [discover]
    foreach: discover.files
    concurrency: 4
    command: echo
    inputs:
      n: {const: 5}
      rows: {ref: tasks.discover.output.rows}
      all: {ref: tasks.discover.output}
    mutex: "db-{{params.db}}"
    priority: 7
    delay: 1m30s
  count:
    depends_on: [discover]
    parallel: discover.count
    command: echo
  fixed:
    parallel: 3
    command: echo
  cleanup:
    depends_on: [process]
    on_failure: run
    command: echo
`

func TestParseSemantics(t *testing.T) {
	s, err := Parse("sem.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	d, p, c, f, cl := s.Lookup("discover"), s.Lookup("process"), s.Lookup("count"), s.Lookup("fixed"), s.Lookup("cleanup")
	if s.MaxActiveRuns != 2 || d.Retries != 3 || *d.RetryBackoff != (Backoff{2 * time.Second, time.Minute, 3}) ||
		d.Timeout != 30*time.Second || d.HeartbeatTimeout != time.Minute || d.StartTimeout != 5*time.Minute || d.OnInterrupt != "fail" {
		t.Errorf("discover: %+v", d)
	}
	if p.Foreach != "discover.files" || p.Concurrency != 4 || p.Mutex != "db-{{params.db}}" || p.Priority != 7 ||
		p.Delay != 90*time.Second || string(p.Inputs["n"].Const) != "5" || p.Inputs["rows"].Ref != "tasks.discover.output.rows" {
		t.Errorf("process: %+v", p)
	}
	if task, field := p.Inputs["rows"].RefTask(); task != "discover" || len(field) != 1 || field[0] != "rows" {
		t.Errorf("RefTask: %s %v", task, field)
	}
	if c.ParallelFrom != "discover.count" || f.Parallel != 3 || cl.OnFailure != "run" {
		t.Errorf("count %+v fixed %+v cleanup %+v", c, f, cl)
	}
	if got := RenderMutex(p.Mutex, map[string]string{"db": "orders"}); got != "db-orders" {
		t.Errorf("RenderMutex: %q", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 10 * time.Second, Factor: 2}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestParseSemanticsErrors(t *testing.T) {
	base := "name: w\nparams: {db: x}\ntasks:\n  up: {command: x}\n  t:\n    command: x\n"
	for _, tc := range []struct{ name, extra, want string }{
		{"negative retries", "    retries: -1\n", "tasks.t.retries: must be an integer from 0 to 1000"},
		{"bad duration", "    timeout: soon\n", `tasks.t.timeout: must be a positive duration such as 30s or 5m, got "soon"`},
		{"zero duration", "    timeout: 0\n", "tasks.t.timeout: must be a positive number of seconds"},
		{"bad on_failure", "    on_failure: maybe\n", `tasks.t.on_failure: must be one of run, skip, got "maybe"`},
		{"backoff key", "    retry_backoff: {inital: 1s}\n", "tasks.t.retry_backoff.inital: unknown key"},
		{"backoff order", "    retry_backoff: {initial: 1m, max: 1s}\n", "tasks.t.retry_backoff: max (1s) is less than initial (1m0s)"},
		// NaN is no number from 1 to 100 (it compares false to both), and a
		// spec holding it has no canonical encoding (JSON has no NaN).
		{"backoff factor NaN", "    retry_backoff: {initial: 1s, max: 1m, factor: NaN}\n", "tasks.t.retry_backoff.factor: must be a number from 1 to 100"},
		{"backoff factor below 1", "    retry_backoff: {factor: 0.5}\n", "tasks.t.retry_backoff.factor: must be a number from 1 to 100, got 0.5"},
		{"backoff factor not a number", "    retry_backoff: {factor: fast}\n", "tasks.t.retry_backoff.factor: must be a number from 1 to 100, got a string"},
		{"foreach not a dep", "    foreach: up.items\n", `tasks.t.foreach: task "up" must be listed in depends_on`},
		{"foreach bad form", "    depends_on: [up]\n    foreach: items\n", "tasks.t.foreach: expected <task>.<field>"},
		{"parallel and foreach", "    depends_on: [up]\n    parallel: 2\n    foreach: up.items\n", "tasks.t.foreach: cannot be combined with parallel"},
		{"concurrency alone", "    concurrency: 2\n", "tasks.t.concurrency: only applies with parallel or foreach"},
		{"ref not a dep", "    inputs: {a: {ref: tasks.up.output}}\n", `tasks.t.inputs.a: refers to task "up", which is not in depends_on`},
		{"ref bad form", "    depends_on: [up]\n    inputs: {a: {ref: up.output}}\n", "tasks.t.inputs.a.ref: expected tasks.<name>.output"},
		{"input both", "    inputs: {a: {const: 1, ref: tasks.up.output}}\n", "tasks.t.inputs.a: expected exactly one of const or ref"},
		{"mutex unknown param", "    mutex: \"x-{{params.nope}}\"\n", "tasks.t.mutex: placeholder {{params.nope}}"},
		{"mutex other placeholder", "    mutex: \"x-{{run.id}}\"\n", "tasks.t.mutex: placeholder {{run.id}}"},
	} {
		_, err := Parse("w.yaml", []byte(base+tc.extra))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParseSchedule(t *testing.T) {
	s, err := Parse("c.yaml", []byte("name: c\nschedule: \"CRON_TZ=Europe/Berlin */5 * * * *\"\ncatchup: all\noverlap: queue\ntasks:\n  a: {command: x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Schedule.Cron != "CRON_TZ=Europe/Berlin */5 * * * *" || s.Schedule.CatchupPolicy() != "all" || s.Schedule.OverlapPolicy() != "queue" {
		t.Fatalf("schedule %+v", s.Schedule)
	}
	for _, tc := range []struct{ src, want string }{
		{"name: c\nschedule: \"@every 30s\"\ntasks:\n  a: {command: x}\n", ""},
		{"name: c\nschedule: \"@hourly\"\ntasks:\n  a: {command: x}\n", ""},
		{"name: c\nschedule: \"CRON_TZ=Nowhere/Land * * * * *\"\ntasks:\n  a: {command: x}\n", "schedule: bad cron expression"},
		{"name: c\ncatchup: all\ntasks:\n  a: {command: x}\n", "c.yaml: catchup: applies only with a schedule"},
		{"name: c\noverlap: queue\ntasks:\n  a: {command: x}\n", "c.yaml: overlap: applies only with a schedule"},
		{"name: c\nschedule: \"@daily\"\noverlap: wait\ntasks:\n  a: {command: x}\n", `overlap: must be one of allow, queue, skip, got "wait"`},
	} {
		_, err := Parse("c.yaml", []byte(tc.src))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}
