package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePythonAndHTTP(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tasks.py"), []byte("def f(): pass\n"), 0o644)
	src := `name: mixed
python: /usr/bin/python3
params: {kind: x}
types:
  Row: {a: int}
tasks:
  py:
    executor: python
    file: tasks.py
    function: f
    input_type: {n: int}
    output_type: {rows: "list[types.Row]"}
    inputs: {n: {const: 1}}
  mod:
    executor: python
    module: pkg.mod
  call:
    executor: http
    method: post
    url: "http://127.0.0.1:9/{{params.kind}}/{{inputs.n}}"
    headers: {Authorization: "Bearer ${env:API_TOKEN}"}
    body: '{"n": {{inputs.n}}}'
    request_timeout: 5s
    inputs: {n: {const: 3}}
    async:
      id_field: id
      status_url: "http://127.0.0.1:9/jobs/{id}"
      status_field: state
      success: done
      failure: [error, lost]
      poll_interval: 1s
`
	file := filepath.Join(dir, "mixed.yaml")
	s, err := Parse(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	py, call := s.Lookup("py"), s.Lookup("call")
	if py.File != filepath.Join(dir, "tasks.py") || py.Function != "f" || string(py.InputType) != `{"n":"int"}` || s.Python != "/usr/bin/python3" || string(s.Types["Row"]) != `{"a":"int"}` {
		t.Errorf("python task: %+v types %v", py, s.Types)
	}
	h := call.HTTP
	if h.Method != "POST" || h.Headers["Authorization"] != "Bearer ${env:API_TOKEN}" || h.Async.Success[0] != "done" || len(h.Async.Failure) != 2 {
		t.Errorf("http task: %+v %+v", h, h.Async)
	}
}

func TestParseExecutorErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.yaml")
	for _, tc := range []struct{ name, task, want string }{
		{"python without file or module", "{executor: python}", "tasks.t: executor python needs exactly one of file and module"},
		{"python missing file", "{executor: python, file: nope.py}", "tasks.t.file: " + filepath.Join(dir, "nope.py") + ": no such file"},
		{"python with command", "{executor: python, module: m, command: x}", "tasks.t.command: not allowed for executor python"},
		{"function on process", "{command: x, function: f}", "tasks.t: module, function and python are for executor python"},
		{"file on process", "{command: x, file: a.sh}", "tasks.t.file: " + filepath.Join(dir, "a.sh") + ": no such file"},
		{"file on http", "{executor: http, url: 'http://x', file: a.sh}", "tasks.t.file: is for executors python, process and library"},
		{"http without url", "{executor: http, method: GET}", "tasks.t.url: required for executor http"},
		{"url on process", "{command: x, url: http://x}", "are for executor http"},
		{"unknown placeholder", "{executor: http, url: 'http://x/{{params.nope}}'}", "tasks.t.url: placeholder {{params.nope}}"},
		{"bad env ref", "{command: x, env: {A: '${API_TOKEN}'}}", "tasks.t.env.A: ${API_TOKEN}: use ${env:NAME}"},
		{"env unknown param", "{command: x, env: {A: 'x-{{params.nope}}'}}", "tasks.t.env.A: placeholder {{params.nope}}"},
		{"env other placeholder", "{command: x, env: {A: '{{ name }}'}}", "tasks.t.env.A: placeholder {{name}}"},
		{"header unknown input", "{executor: http, url: 'http://x', headers: {X-A: '{{inputs.nope}}'}}", "tasks.t.headers.X-A: placeholder {{inputs.nope}}"},
		{"async without id", "{executor: http, url: 'http://x', async: {status_field: s, success: [ok]}}", "exactly one of id_field (with status_url) and status_url_field"},
	} {
		_, err := Parse(file, []byte("name: w\ntasks:\n  t: "+tc.task+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse("", []byte("name: w\ntasks:\n  t: {executor: python, file: t.py}\n")); err == nil || !strings.Contains(err.Error(), "has no folder") {
		t.Errorf("relative file without a folder: %v", err)
	}
}

// TestProcessFile: Ork's file on a process task is the program to run,
// resolved against the workflow's folder; a command, when given, runs
// instead, as in Ork.
func TestProcessFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	s, err := Parse(filepath.Join(dir, "w.yaml"), []byte("name: w\ntasks:\n  a: {file: run.sh}\n  b: {executor: shell, file: run.sh, command: echo b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "run.sh")
	if a := s.Lookup("a"); len(a.Command) != 1 || a.Command[0] != script || a.File != script {
		t.Errorf("a: command %q file %q, want [%s]", a.Command, a.File, script)
	}
	if b := s.Lookup("b"); strings.Join(b.Command, " ") != "sh -c echo b" {
		t.Errorf("b: command %q, want its own", b.Command)
	}
}

// TestParseLibrary: executor library needs a file, resolved against the
// workflow's folder, and takes no command.
func TestParseLibrary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "libt.so"), nil, 0o644)
	file := filepath.Join(dir, "w.yaml")
	s, err := Parse(file, []byte("name: w\ntasks:\n  t: {executor: library, file: libt.so}\n"))
	if err != nil || s.Lookup("t").File != filepath.Join(dir, "libt.so") {
		t.Fatalf("%v", err)
	}
	for task, want := range map[string]string{
		"{executor: library}":                            "tasks.t.file: required for executor library",
		"{executor: library, file: libt.so, command: x}": "tasks.t.command: not allowed for executor library",
		"{executor: library, file: nope.so}":             "no such file",
	} {
		if _, err := Parse(file, []byte("name: w\ntasks:\n  t: "+task+"\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", task, err, want)
		}
	}
}
