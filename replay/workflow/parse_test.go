package workflow

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const validDAG = `name: etl
description: three steps
params:
  date: "2024-01-01"
  limit: 100
  dry_run: false
  empty:
tasks:
  load:
    command: ["python3", "load.py", 42]
    depends_on: [transform]
    workdir: out/../jobs
  extract:
    command: python3 extract.py > raw.json
    env:
      LOG_LEVEL: debug
      BATCH: 500
      _X1: ""
    workdir: /srv/data/
  transform:
    executor: process
    command: [python3, transform.py]
    depends_on: extract
`

func TestParseValid(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "etl.yaml")
	if err := os.WriteFile(file, []byte(validDAG), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(file, []byte(validDAG))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Spec{
		Name:        "etl",
		Description: "three steps",
		Params:      map[string]string{"date": "2024-01-01", "limit": "100", "dry_run": "false", "empty": ""},
		Dir:         dir,
		Tasks: []*Task{
			{
				Name:     "extract",
				Executor: "process",
				Command:  []string{"sh", "-c", "python3 extract.py > raw.json"},
				Env:      map[string]string{"LOG_LEVEL": "debug", "BATCH": "500", "_X1": ""},
				Workdir:  "/srv/data",
			},
			{
				Name:      "transform",
				Executor:  "process",
				Command:   []string{"python3", "transform.py"},
				DependsOn: []string{"extract"},
			},
			{
				Name:      "load",
				Executor:  "process",
				Command:   []string{"python3", "load.py", "42"},
				Workdir:   filepath.Join(dir, "jobs"),
				DependsOn: []string{"transform"},
			},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse mismatch\n got: %s\nwant: %s", dump(got), dump(want))
	}
}

func TestParseWithoutFile(t *testing.T) {
	got, err := Parse("", []byte(validDAG))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got.Dir != "" {
		t.Errorf("Dir = %q, want empty", got.Dir)
	}
	if w := got.Lookup("load").Workdir; w != "out/../jobs" {
		t.Errorf("load workdir = %q, want it kept as written", w)
	}
	if w := got.Lookup("extract").Workdir; w != "/srv/data/" {
		t.Errorf("extract workdir = %q, want it kept as written", w)
	}

	_, err = Parse("", []byte("tasks: {a: {command: x}}\n"))
	if want := "workflow: name: required"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestParseRelativeFileName(t *testing.T) {
	got, err := Parse("etl.yaml", []byte(validDAG))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got.Dir != wd {
		t.Errorf("Dir = %q, want %q", got.Dir, wd)
	}
	if w, want := got.Lookup("load").Workdir, filepath.Join(wd, "jobs"); w != want {
		t.Errorf("load workdir = %q, want %q", w, want)
	}
}

func TestParseOrder(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"file order when independent", `
name: w
tasks:
  c: {command: x}
  a: {command: x}
  b: {command: x}
`, []string{"c", "a", "b"}},
		{"dependency first", `
name: w
tasks:
  x: {command: x, depends_on: z}
  y: {command: x}
  z: {command: x}
`, []string{"y", "z", "x"}},
		{"ready task earliest in file wins", `
name: w
tasks:
  d: {command: x, depends_on: [b, c]}
  a: {command: x}
  b: {command: x, depends_on: [a]}
  c: {command: x}
`, []string{"a", "b", "c", "d"}},
		{"noop join", `
name: w
tasks:
  end: {executor: noop, depends_on: [left, right]}
  right: {command: x, depends_on: [start]}
  left: {command: x, depends_on: [start]}
  start: {executor: noop}
`, []string{"start", "right", "left", "end"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("w.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := taskNames(s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseAliases(t *testing.T) {
	data := []byte("name: a\ntasks:\n  a: &t {command: &c [echo, hi]}\n  b: *t\n  c: {command: *c, depends_on: &d [a, b]}\n")
	s, err := Parse("", data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []*Task{
		{Name: "a", Executor: "process", Command: []string{"echo", "hi"}},
		{Name: "b", Executor: "process", Command: []string{"echo", "hi"}},
		{Name: "c", Executor: "process", Command: []string{"echo", "hi"}, DependsOn: []string{"a", "b"}},
	}
	if !reflect.DeepEqual(s.Tasks, want) {
		t.Errorf("Tasks = %s, want aliases resolved", dump(s))
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		name string
		yaml string
		want string // substring of the error message
	}{
		// The file as a whole.
		{"empty", "", "etl.yaml: empty workflow"},
		{"only comments", "# nothing\n\n", "etl.yaml: empty workflow"},
		{"null document", "---\n", "etl.yaml: empty workflow"},
		{"malformed", "name: etl\ntasks:\n  a: [x\n  b: y\n", "etl.yaml: invalid YAML: did not find expected ',' or ']' (line 2)"},
		{"malformed indentation", "name: etl\n tasks: x\n", "etl.yaml: invalid YAML: unexpected 'key:' here: this line is indented deeper than a key of the mapping above, or a value holds ': ' (quote the value) (line 2, column 2)"},
		{"multiple documents", "name: a\ntasks: {a: {command: x}}\n---\nname: b\n", "etl.yaml: several YAML documents (a second starts at line 3)"},
		{"malformed second document", "name: a\ntasks: {a: {command: x}}\n---\nname: [\n", "etl.yaml: invalid YAML: did not find expected node content (line 4)"},
		{"top level list", "- a\n- b\n", "etl.yaml: expected a mapping with name and tasks at the top level, got a list"},
		{"duplicate key", "name: a\nname: b\ntasks: {a: {command: x}}\n", "etl.yaml: name: duplicate key (first defined at line 1)"},
		{"duplicate task", "name: a\ntasks:\n  t: {command: x}\n  t: {command: y}\n", "etl.yaml: tasks.t: duplicate key (first defined at line 3)"},
		{"merge key", "name: a\ntasks:\n  s: &b {command: x}\n  t:\n    <<: *b\n", `etl.yaml: tasks.t."<<": merge keys are not supported`},
		{"merge key in task", "name: a\ntasks:\n  t:\n    <<: {command: x}\n", `etl.yaml: tasks.t."<<": merge keys are not supported`},
		{"list key", "name: a\n? [x]\n: 1\ntasks: {a: {command: x}}\n", "etl.yaml: keys must be strings, got a list"},

		// Unknown and not yet supported keys.
		{"unknown top-level key", "name: a\nnmae: b\ntasks: {a: {command: x}}\n", "etl.yaml: nmae: unknown key"},
		{"unknown task key", "name: etl\ntasks:\n  extract:\n    comand: [x]\n", "etl.yaml: tasks.extract.comand: unknown key"},
		{"bad cron", "name: a\nschedule: \"61 * * * *\"\ntasks:\n  a: {command: x}\n", `etl.yaml: schedule: bad cron expression "61 * * * *"`},
		{"task key at top level", "name: a\nretries: 3\ntasks: {a: {command: x}}\n", "etl.yaml: retries: unknown key"},
		{"workflow key in task", "name: a\ntasks:\n  a: {command: x, schedule: daily}\n", "etl.yaml: tasks.a.schedule: unknown key"},
		{"odd key quoted", "name: a\ntasks:\n  a: {command: x, \"bad key\": 1}\n", `etl.yaml: tasks.a."bad key": unknown key`},

		// Wrong types.
		{"name is a mapping", "name: {a: 1}\ntasks: {a: {command: x}}\n", "etl.yaml: name: expected a string, got a mapping"},
		{"description is a list", "name: a\ndescription: [x]\ntasks: {a: {command: x}}\n", "etl.yaml: description: expected a string, got a list"},
		{"params is a list", "name: a\nparams: [x]\ntasks: {a: {command: x}}\n", "etl.yaml: params: expected a mapping of parameter names to default values, got a list"},
		{"param value is a list", "name: a\nparams: {p: [1]}\ntasks: {a: {command: x}}\n", "etl.yaml: params.p: expected a string, got a list"},
		{"tasks is a list", "name: a\ntasks:\n  - a\n", "etl.yaml: tasks: expected a mapping of task names to tasks, got a list"},
		{"task is a list", "name: a\ntasks:\n  a: [x]\n", "etl.yaml: tasks.a: expected a mapping of task keys, got a list"},
		{"command is a number", "name: a\ntasks:\n  a: {command: 5}\n", "etl.yaml: tasks.a.command: expected a list of strings or a string, got a number"},
		{"command is a mapping", "name: a\ntasks:\n  a: {command: {x: 1}}\n", "etl.yaml: tasks.a.command: expected a list of strings or a string, got a mapping"},
		{"command item is a mapping", "name: a\ntasks:\n  a: {command: [echo, {x: 1}]}\n", "etl.yaml: tasks.a.command[1]: expected a string, got a mapping"},
		{"command item is null", "name: a\ntasks:\n  a: {command: [echo, null]}\n", "etl.yaml: tasks.a.command[1]: expected a string, got null"},
		{"command item is binary", "name: a\ntasks:\n  a: {command: [echo, !!binary aGk=]}\n", "etl.yaml: tasks.a.command[1]: expected a string, got binary data"},
		{"depends_on item is a mapping", "name: a\ntasks:\n  a: {command: x}\n  b: {command: x, depends_on: [{a: 1}]}\n", "etl.yaml: tasks.b.depends_on[0]: expected a string, got a mapping"},
		{"depends_on is a mapping", "name: a\ntasks:\n  a: {command: x}\n  b: {command: x, depends_on: {a: 1}}\n", "etl.yaml: tasks.b.depends_on: expected a list of task names or a task name, got a mapping"},
		{"env is a list", "name: a\ntasks:\n  a: {command: x, env: [A=1]}\n", "etl.yaml: tasks.a.env: expected a mapping of variable names to values, got a list"},
		{"env value is a mapping", "name: a\ntasks:\n  a: {command: x, env: {A: {b: 1}}}\n", "etl.yaml: tasks.a.env.A: expected a string, got a mapping"},
		{"executor is a number", "name: a\ntasks:\n  a: {command: x, executor: 1}\n", "etl.yaml: tasks.a.executor: expected a string, got a number"},
		{"workdir is a list", "name: a\ntasks:\n  a: {command: x, workdir: [d]}\n", "etl.yaml: tasks.a.workdir: expected a string, got a list"},

		// Values.
		{"unknown executor", "name: a\ntasks:\n  a: {command: x, executor: docker}\n", `etl.yaml: tasks.a.executor: unknown executor "docker" (allowed: process, noop, python, http, library, cloudrun)`},
		{"missing command", "name: a\ntasks:\n  a: {env: {A: b}}\n", "etl.yaml: tasks.a.command: required for executor process"},
		{"null task", "name: a\ntasks:\n  a:\n", "etl.yaml: tasks.a.command: required for executor process"},
		{"null command", "name: a\ntasks:\n  a: {command: null}\n", "etl.yaml: tasks.a.command: required for executor process"},
		{"empty command list", "name: a\ntasks:\n  a: {command: []}\n", "etl.yaml: tasks.a.command: must not be empty"},
		{"blank command string", "name: a\ntasks:\n  a: {command: '  '}\n", "etl.yaml: tasks.a.command: must not be blank"},
		{"empty program", "name: a\ntasks:\n  a: {command: ['', x]}\n", "etl.yaml: tasks.a.command[0]: program must not be blank"},
		{"NUL in argument", "name: a\ntasks:\n  a: {command: [echo, \"a\\0b\"]}\n", "etl.yaml: tasks.a.command[1]: must not contain a NUL character"},
		{"noop with command", "name: a\ntasks:\n  a: {executor: noop, command: [x]}\n", "etl.yaml: tasks.a.command: not allowed for executor noop"},
		{"bad env name", "name: a\ntasks:\n  a: {command: x, env: {1A: b}}\n", "etl.yaml: tasks.a.env.1A: invalid variable name"},
		{"bad env name dash", "name: a\ntasks:\n  a: {command: x, env: {A-B: b}}\n", "etl.yaml: tasks.a.env.A-B: invalid variable name"},
		{"bad param name", "name: a\nparams: {'a b': 1}\ntasks: {a: {command: x}}\n", `etl.yaml: params."a b": invalid parameter name`},

		// Names.
		{"missing name", "tasks: {a: {command: x}}\n", "etl.yaml: name: required"},
		{"null name", "name:\ntasks: {a: {command: x}}\n", "etl.yaml: name: required"},
		{"empty name", "name: ''\ntasks: {a: {command: x}}\n", "etl.yaml: name: required"},
		{"bad name charset", "name: my etl\ntasks: {a: {command: x}}\n", `etl.yaml: name: invalid name "my etl": use letters, digits`},
		{"name starts with dash", "name: -etl\ntasks: {a: {command: x}}\n", `etl.yaml: name: invalid name "-etl"`},
		{"name too long", "name: " + long + "\ntasks: {a: {command: x}}\n", `etl.yaml: name: invalid name "` + long + `"`},
		{"bad task name", "name: a\ntasks:\n  a/b: {command: x}\n", `etl.yaml: tasks."a/b": invalid task name`},
		{"missing tasks", "name: a\n", "etl.yaml: tasks: required"},
		{"null tasks", "name: a\ntasks:\n", "etl.yaml: tasks: required"},
		{"no tasks", "name: a\ntasks: {}\n", "etl.yaml: tasks: must define at least one task"},

		// Dependencies.
		{"unknown dependency", "name: etl\ntasks:\n  transform: {command: x}\n  load: {command: x, depends_on: [trnsform]}\n", `etl.yaml: tasks.load.depends_on: unknown task "trnsform"`},
		{"unknown single dependency", "name: etl\ntasks:\n  load: {command: x, depends_on: extract}\n", `etl.yaml: tasks.load.depends_on: unknown task "extract"`},
		{"self dependency", "name: a\ntasks:\n  a: {command: x, depends_on: [a]}\n", `etl.yaml: tasks.a.depends_on: task "a" depends on itself`},
		{"dependency listed twice", "name: a\ntasks:\n  a: {command: x}\n  b: {command: x, depends_on: [a, a]}\n", `etl.yaml: tasks.b.depends_on: task "a" listed twice`},
		{"cycle of 2", "name: w\ntasks:\n  a: {command: x, depends_on: [b]}\n  b: {command: x, depends_on: [a]}\n", "etl.yaml: tasks.a: dependency cycle a -> b -> a"},
		{"cycle of 3", "name: w\ntasks:\n  a: {command: x, depends_on: [b]}\n  b: {command: x, depends_on: [c]}\n  c: {command: x, depends_on: [a]}\n", "etl.yaml: tasks.a: dependency cycle a -> b -> c -> a"},
		{"cycle after acyclic prefix", "name: w\ntasks:\n  s: {command: x}\n  a: {command: x, depends_on: [s, b]}\n  b: {command: x, depends_on: [c]}\n  c: {command: x, depends_on: [b]}\n", "etl.yaml: tasks.b: dependency cycle b -> c -> b"},

		// The first error in file order wins.
		{"first error wins", "name: a\ntasks:\n  a: {comand: x}\n  b: {command: 5}\nbogus: 1\n", "etl.yaml: tasks.a.comand: unknown key"},
		{"key errors before missing name", "tasks:\n  a: {command: 5}\n", "etl.yaml: tasks.a.command: expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("etl.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded (%s), want error containing %q", dump(s), tt.want)
			}
			if s != nil {
				t.Errorf("Parse returned a Spec along with error %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tt.want)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Errorf("error %T is not a *workflow.Error", err)
			}
		})
	}
}

func TestParseErrorDetails(t *testing.T) {
	_, err := Parse("etl.yaml", []byte("name: a\ntasks:\n  a: {command: x}\n  b: {command: x, depends_on: [zz]}\n"))
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := Error{File: "etl.yaml", Path: "tasks.b.depends_on", Line: 4, Col: 31, Msg: `unknown task "zz"`}
	if *perr != want {
		t.Errorf("err = %+v, want %+v", *perr, want)
	}

	_, err = Parse("etl.yaml", []byte("name: [\n"))
	if !errors.As(err, &perr) || perr.Err == nil {
		t.Fatalf("err = %#v, want *Error wrapping the yaml error", err)
	}
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file    string
		want    []string // task order, when valid
		wantErr string
	}{
		{file: "valid.yaml", want: []string{"extract", "transform", "load", "report"}},
		{file: "cycle.yaml", wantErr: "cycle.yaml: tasks.a: dependency cycle a -> c -> b -> a"},
		{file: "unknown_dep.yaml", wantErr: `unknown_dep.yaml: tasks.load.depends_on: unknown task "trnsform"`},
		{file: "malformed.yaml", wantErr: "malformed.yaml: invalid YAML: did not find expected ',' or ']' (line 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			name := fixture(tt.file)
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(name, data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := taskNames(s); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
			dir, err := filepath.Abs(filepath.Dir(name))
			if err != nil {
				t.Fatal(err)
			}
			if s.Dir != dir {
				t.Errorf("Dir = %q, want %q", s.Dir, dir)
			}
		})
	}
}

func TestParseDeterministic(t *testing.T) {
	// A wide DAG: many ties, so any dependence on map order shows.
	var b strings.Builder
	b.WriteString("name: wide\nparams: {a: 1, b: 2, c: 3}\ntasks:\n")
	names := "qwertyuiopasdfghjklzxcvbnm"
	for i, r := range names {
		b.WriteString("  " + string(r) + ":\n    command: [echo, " + string(r) + "]\n    env: {A: 1, B: 2}\n")
		if i%3 == 2 {
			b.WriteString("    depends_on: [" + string(names[i-1]) + ", " + string(names[i-2]) + "]\n")
		}
	}
	inputs := map[string][]byte{"wide": []byte(b.String())}
	data, err := os.ReadFile(fixture("valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inputs["valid.yaml"] = data

	for name, data := range inputs {
		first, err := Parse(name, data)
		if err != nil {
			t.Fatalf("%s: Parse: %v", name, err)
		}
		for i := 0; i < 50; i++ {
			again, err := Parse(name, data)
			if err != nil {
				t.Fatalf("%s: Parse #%d: %v", name, i, err)
			}
			if !reflect.DeepEqual(taskNames(again), taskNames(first)) {
				t.Fatalf("%s: order changed on parse #%d: %v, then %v", name, i, taskNames(first), taskNames(again))
			}
			if !reflect.DeepEqual(again, first) {
				t.Fatalf("%s: Spec changed on parse #%d", name, i)
			}
		}
	}
}

func fixture(name string) string {
	return filepath.Join("..", "..", "testdata", "workflows", name)
}

func taskNames(s *Spec) []string {
	var out []string
	for _, t := range s.Tasks {
		out = append(out, t.Name)
	}
	return out
}

func dump(s *Spec) string {
	if s == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("{Name:" + s.Name + " Dir:" + s.Dir + " Tasks:[")
	for _, t := range s.Tasks {
		b.WriteString(" " + t.Name + "(" + t.Executor + " " + strings.Join(t.Command, " ") + " wd=" + t.Workdir + " deps=" + strings.Join(t.DependsOn, ",") + ")")
	}
	b.WriteString(" ]}")
	return b.String()
}

// Ork calls the process executor "shell"; its files must run unchanged.
func TestParseShellIsProcess(t *testing.T) {
	s, err := Parse("ork.yaml", []byte("name: ork\ntasks:\n  a: {executor: shell, command: echo hi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Tasks[0].Executor; got != "process" {
		t.Fatalf("executor %q, want process", got)
	}
}
