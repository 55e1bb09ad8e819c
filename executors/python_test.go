package executors

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

var _ Preparer = (*Python)(nil)

// tasksPy is the Python file the tests call functions of.
const tasksPy = `import dataclasses, datetime, os, sys, time

def stamp(name):
    utc = datetime.timezone.utc
    return {"name": name, "at": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=utc),
            "day": datetime.date(2024, 1, 2), "pair": (1, 2)}

def bad_row(row):
    raise ValueError("bad row %d" % row)

def chatty():
    print("to stdout")
    print("to stderr", file=sys.stderr)
    return "done"

def attempt():
    return {"ork": int(os.environ["ORK_ATTEMPT"]), "orkwal": int(os.environ["ORKWAL_ATTEMPT"])}

def echo(**kwargs):
    return kwargs

def returns(value):
    return value

def naive():
    return datetime.datetime(2024, 1, 2, 3, 4, 5)

def nothing():
    print("no return value")

def a_set():
    return {"s": {1, 2}}

@dataclasses.dataclass
class Point:
    x: int
    y: int

def point():
    return Point(1, 2)

def wait():
    print("ready", flush=True)
    time.sleep(60)

not_a_function = 3
`

// testInterpreter is the Python the tests run: the real binary behind
// python3, found once, since a version manager's shim (pyenv) can cost
// more than the task itself.
var testInterpreter = sync.OnceValue(func() string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if path := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(path) {
		return path
	}
	return "python3"
})

// writeFile writes content to dir/name (dir "": name is the path),
// creating its folder, and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// newPythonJob returns a job calling function of a fresh copy of tasksPy
// with inputs (a JSON object, "" for no input document).
func newPythonJob(t *testing.T, function, inputs string) Job {
	t.Helper()
	job := newTestJob(t)
	job.Python = &PythonJob{File: writeFile(t, t.TempDir(), "tasks.py", tasksPy), Function: function,
		Interpreter: testInterpreter()}
	if inputs != "" {
		job.Input = []byte(`{"params": {"day": "x"}, "inputs": ` + inputs + `, "upstream": {}}`)
	}
	return job
}

// newTestPython returns a Python executor writing its runner to a
// temporary folder.
func newTestPython(t *testing.T) *Python {
	t.Helper()
	return NewPython(PythonConfig{RunnerDir: t.TempDir()})
}

// startPython starts job and returns its handle and events.
func startPython(t *testing.T, p *Python, job Job) (Handle, <-chan Event) {
	t.Helper()
	events := make(chan Event, 4)
	h, err := p.Start(job, func(ev Event) { events <- ev })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return h, events
}

// runPython runs job on a fresh executor and returns its Finished event.
func runPython(t *testing.T, job Job) Event {
	t.Helper()
	_, events := startPython(t, newTestPython(t), job)
	expectStarted(t, job, events)
	return expectFinished(t, job, events)
}

// expectOK checks that fin succeeded with output want (compared as JSON).
func expectOK(t *testing.T, fin Event, want string) {
	t.Helper()
	if !fin.OK || fin.ExitCode != 0 || fin.Err != "" {
		t.Fatalf("Finished = {OK:%v Exit:%d Err:%q}, want success", fin.OK, fin.ExitCode, fin.Err)
	}
	if !jsonEqual(t, fin.Output, want) {
		t.Errorf("Output = %s, want %s", fin.Output, want)
	}
}

// expectFailed checks that fin failed with exit 1 and Err want.
func expectFailed(t *testing.T, fin Event, want string) {
	t.Helper()
	if fin.OK || fin.ExitCode != 1 || fin.Err != want {
		t.Errorf("Finished = {OK:%v Exit:%d Err:%q}, want exit 1 with Err %q", fin.OK, fin.ExitCode, fin.Err, want)
	}
}

// jsonEqual compares a JSON document with want ("" = no document).
func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	if want == "" || got == nil {
		return want == "" && got == nil
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

func TestPythonReturnsDictWithDatetime(t *testing.T) {
	t.Parallel()
	fin := runPython(t, newPythonJob(t, "stamp", `{"name": "x"}`))
	expectOK(t, fin, `{"name": "x", "at": "2024-01-02T03:04:05+00:00", "day": "2024-01-02", "pair": [1, 2]}`)
}

func TestPythonExceptionFailsWithLastLine(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "bad_row", `{"row": 7}`)
	expectFailed(t, runPython(t, job), "ValueError: bad row 7")
	log := readLog(t, job)
	for _, want := range []string{"Traceback (most recent call last):", job.Python.File, `raise ValueError("bad row %d" % row)`, "ValueError: bad row 7\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "runner-") {
		t.Errorf("traceback shows the runner's frames:\n%s", log)
	}
}

func TestPythonPrintGoesToLog(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "chatty", "")
	expectOK(t, runPython(t, job), `"done"`)
	if got, want := readLog(t, job), "to stdout\nto stderr\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

func TestPythonReadsOrkAttempt(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "attempt", "")
	job.Python.Interpreter = "" // the default, python3 from PATH
	job.Attempt = 3
	expectOK(t, runPython(t, job), `{"ork": 3, "orkwal": 3}`)
}

func TestPythonOutputForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		function, wantOutput, wantErr string
	}{
		{function: "nothing"}, // None: no output
		{function: "point", wantOutput: `{"x": 1, "y": 2}`},
		{function: "a_set", wantErr: `output "s": a set is not JSON (return dict, list, str, int, float, bool, None, datetime or date)`},
		{function: "nope", wantErr: `function 'nope' not found in `},
		{function: "not_a_function", wantErr: `'not_a_function' in `},
	}
	for _, tt := range tests {
		t.Run(tt.function, func(t *testing.T) {
			t.Parallel()
			job := newPythonJob(t, tt.function, "")
			fin := runPython(t, job)
			if tt.wantErr == "" {
				expectOK(t, fin, tt.wantOutput)
				return
			}
			if fin.OK || fin.ExitCode != 1 || !strings.HasPrefix(fin.Err, tt.wantErr) {
				t.Errorf("Finished = {OK:%v Exit:%d Err:%q}, want Err starting %q", fin.OK, fin.ExitCode, fin.Err, tt.wantErr)
			}
			if !strings.Contains(readLog(t, job), "orkwal: "+fin.Err) {
				t.Errorf("log lacks the reason:\n%s", readLog(t, job))
			}
		})
	}
}

func TestPythonMissingFunctionNamesTheFile(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "nope", "")
	expectFailed(t, runPython(t, job), "function 'nope' not found in "+job.Python.File)
}

func TestPythonModuleWithSysPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "pkg/__init__.py", "")
	writeFile(t, root, "pkg/helper.py", "GREETING = 'hi'\n")
	writeFile(t, root, "pkg/tasks.py", "from pkg.helper import GREETING\n\ndef greet(name):\n    return GREETING + ' ' + name\n")

	job := newTestJob(t)
	job.Input = []byte(`{"inputs": {"name": "ada"}}`)
	job.Python = &PythonJob{Module: "pkg.tasks", SysPath: []string{root}, Function: "greet", Interpreter: testInterpreter()}
	expectOK(t, runPython(t, job), `"hi ada"`)

	job = newTestJob(t)
	job.Python = &PythonJob{Module: "pkg.tasks", Function: "greet", Interpreter: testInterpreter()}
	expectFailed(t, runPython(t, job), "import module pkg.tasks: ModuleNotFoundError: No module named 'pkg'")
}

func TestPythonFileImportsSiblings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "helper.py", "GREETING = 'hi'\n")
	job := newTestJob(t)
	job.Python = &PythonJob{Interpreter: testInterpreter(), File: writeFile(t, dir, "flow.py",
		"import sys\nfrom helper import GREETING\n\ndef main():\n    return {'greeting': GREETING, 'path': sys.path}\n")}
	p := newTestPython(t)
	_, events := startPython(t, p, job)
	expectStarted(t, job, events)
	fin := expectFinished(t, job, events)
	var out struct {
		Greeting string
		Path     []string
	}
	if err := json.Unmarshal(fin.Output, &out); !fin.OK || err != nil {
		t.Fatalf("Finished = %+v (%v)", fin, err)
	}
	if out.Greeting != "hi" || len(out.Path) == 0 || out.Path[0] != dir {
		t.Errorf("output = %+v, want the greeting and %s first on sys.path", out, dir)
	}
	if slices.Contains(out.Path, p.cfg.RunnerDir) {
		t.Errorf("sys.path %q holds the runner's folder", out.Path)
	}
}

func TestPythonImportErrorOfFile(t *testing.T) {
	t.Parallel()
	job := newTestJob(t)
	job.Python = &PythonJob{File: writeFile(t, t.TempDir(), "broken.py", "x = 1\nraise RuntimeError('no config')\n"),
		Interpreter: testInterpreter()}
	fin := runPython(t, job)
	expectFailed(t, fin, "import "+job.Python.File+": RuntimeError: no config")
	if log := readLog(t, job); !strings.Contains(log, "raise RuntimeError('no config')") {
		t.Errorf("log lacks the traceback:\n%s", log)
	}

	job = newTestJob(t)
	job.Python = &PythonJob{File: filepath.Join(t.TempDir(), "absent.py"), Interpreter: testInterpreter()}
	expectFailed(t, runPython(t, job), "python file not found: "+job.Python.File)
}

func TestPythonTypeChecks(t *testing.T) {
	t.Parallel()
	row := `{"a": "int", "when": "datetime"}`
	tests := []struct {
		name       string
		function   string // echo (returns its inputs) unless set
		inputType  string
		outputType string
		types      map[string]string
		inputs     string
		wantOutput string
		wantErr    string
	}{
		{name: "input matches", inputType: `{"count": "int", "ratio": "float", "ok": "bool", "s": "str"}`,
			inputs: `{"count": 3, "ratio": 1, "ok": true, "s": ""}`, wantOutput: `{"count": 3, "ratio": 1, "ok": true, "s": ""}`},
		{name: "input mismatch", inputType: `{"count": "int"}`, inputs: `{"count": "3"}`,
			wantErr: `input "count": expected int, got str`},
		{name: "bool is not int", inputType: `{"count": "int"}`, inputs: `{"count": true}`,
			wantErr: `input "count": expected int, got bool`},
		{name: "missing input", inputType: `{"a": "int"}`, inputs: `{}`,
			wantErr: `input "a": missing, expected int`},
		{name: "undeclared input", inputType: `{"a": "int"}`, inputs: `{"a": 1, "b": 2}`,
			wantErr: `input "b": not declared in input_type`},
		{name: "optional absent or null", inputType: `{"note": "optional[str]", "n": "int?"}`, inputs: `{"note": null}`,
			wantOutput: `{"note": null}`},
		{name: "optional present", inputType: `{"note": "optional[str]"}`, inputs: `{"note": "x"}`, wantOutput: `{"note": "x"}`},
		{name: "optional wrong", inputType: `{"note": "str?"}`, inputs: `{"note": 3}`,
			wantErr: `input "note": expected str?, got int`},
		{name: "named type", inputType: `{"row": "types.Row"}`, types: map[string]string{"Row": row},
			inputs:     `{"row": {"a": 1, "when": "2024-01-02T03:04:05Z", "extra": 1}}`,
			wantOutput: `{"row": {"a": 1, "when": "2024-01-02T03:04:05Z", "extra": 1}}`},
		{name: "named type field mismatch", inputType: `{"row": "Row"}`, types: map[string]string{"Row": row},
			inputs: `{"row": {"a": "1", "when": "2024-01-02T03:04:05Z"}}`, wantErr: `input "row.a": expected int, got str`},
		{name: "named type missing field", inputType: `{"row": "Row"}`, types: map[string]string{"Row": row},
			inputs: `{"row": {"a": 1}}`, wantErr: `input "row.when": missing, expected datetime`},
		{name: "named type not an object", inputType: `{"row": "Row"}`, types: map[string]string{"Row": row},
			inputs: `{"row": 5}`, wantErr: `input "row": expected Row, got int`},
		{name: "named input_type", inputType: `"Args"`, types: map[string]string{"Args": `{"x": "int"}`},
			inputs: `{"x": "no"}`, wantErr: `input "x": expected int, got str`},
		{name: "datetime without zone", inputType: `{"t": "datetime"}`, inputs: `{"t": "2024-01-02T03:04:05"}`,
			wantErr: `input "t": expected datetime, got datetime_notz`},
		{name: "datetime_notz with zone", inputType: `{"t": "datetime_notz"}`, inputs: `{"t": "2024-01-02T03:04:05+02:00"}`,
			wantErr: `input "t": expected datetime_notz, got datetime`},
		{name: "datetime not a date", inputType: `{"t": "datetime"}`, inputs: `{"t": "2024-13-02T03:04:05Z"}`,
			wantErr: `input "t": expected datetime, got str`},
		{name: "temporal forms", inputType: `{"d": "date", "n": "datetime_notz", "z": "datetime_tz", "u": "datetime_utc"}`,
			inputs:     `{"d": "2024-01-02", "n": "2024-01-02T03:04:05.123", "z": "2024-01-02T03:04:05-07:00", "u": "2024-01-02T03:04:05Z"}`,
			wantOutput: `{"d": "2024-01-02", "n": "2024-01-02T03:04:05.123", "z": "2024-01-02T03:04:05-07:00", "u": "2024-01-02T03:04:05Z"}`},
		{name: "list element", inputType: `{"tags": "list[str]"}`, inputs: `{"tags": ["a", 2]}`,
			wantErr: `input "tags[1]": expected str, got int`},
		{name: "list and dict", inputType: `{"l": "list", "d": "dict"}`, inputs: `{"l": [1, "x"], "d": []}`,
			wantErr: `input "d": expected dict, got list`},
		{name: "output mismatch", function: "returns", outputType: `{"total": "int"}`, inputs: `{"value": {"total": "x"}}`,
			wantErr: `output "total": expected int, got str`},
		{name: "output scalar", function: "returns", outputType: `"int"`, inputs: `{"value": "x"}`,
			wantErr: `output: expected int, got str`},
		{name: "output list of named (Ork form)", function: "returns", outputType: `{"rows": ["types.Row"]}`,
			types: map[string]string{"Row": row}, inputs: `{"value": {"rows": [{"a": 1, "when": "2024-01-02T03:04:05+01:00"}, {"a": 2}]}}`,
			wantErr: `output "rows[1].when": missing, expected datetime`},
		{name: "output naive datetime", function: "naive", outputType: `"datetime"`,
			wantErr: `output: expected datetime, got datetime_notz`},
		{name: "output None against optional", function: "nothing", outputType: `"int?"`},
		{name: "output None against int", function: "nothing", outputType: `"int"`,
			wantErr: `output: expected int, got None`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			function := tt.function
			if function == "" {
				function = "echo"
			}
			job := newPythonJob(t, function, tt.inputs)
			job.Python.InputType = rawJSON(tt.inputType)
			job.Python.OutputType = rawJSON(tt.outputType)
			job.Python.CheckTypes = true
			for name, expr := range tt.types {
				if job.Python.Types == nil {
					job.Python.Types = map[string]json.RawMessage{}
				}
				job.Python.Types[name] = json.RawMessage(expr)
			}
			fin := runPython(t, job)
			if tt.wantErr != "" {
				expectFailed(t, fin, tt.wantErr)
				return
			}
			expectOK(t, fin, tt.wantOutput)
		})
	}
}

// rawJSON returns s as a raw JSON value, nil for "".
func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func TestPythonStartErrors(t *testing.T) {
	t.Parallel()
	file := "/abs/tasks.py"
	tests := []struct {
		name string
		py   *PythonJob
		want string
	}{
		{name: "no python", py: nil, want: "no python task"},
		{name: "both", py: &PythonJob{File: file, Module: "m"}, want: "more than one of file, module and library"},
		{name: "neither", py: &PythonJob{Function: "f"}, want: "neither file nor module"},
		{name: "relative file", py: &PythonJob{File: "tasks.py"}, want: `python file "tasks.py" is not an absolute path`},
		{name: "bad type", py: &PythonJob{File: file, InputType: json.RawMessage(`{"a": "integer"}`)},
			want: `input_type: field "a": unknown type "integer"`},
		{name: "no interpreter", py: &PythonJob{File: file, Interpreter: "orkwal-no-such-python"},
			want: "orkwal-no-such-python"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t)
			job.Python = tt.py
			var reported atomic.Int32
			h, err := newTestPython(t).Start(job, func(Event) { reported.Add(1) })
			if err == nil || h != nil {
				t.Fatalf("Start = %v, %v; want an error", h, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), job.TaskID) {
				t.Errorf("error %q lacks %q or the task id", err, tt.want)
			}
			if tt.name == "no interpreter" && !errors.Is(err, exec.ErrNotFound) {
				t.Errorf("error %q does not wrap exec.ErrNotFound", err)
			}
			if n := reported.Load(); n != 0 {
				t.Errorf("%d events reported for a job that never started", n)
			}
		})
	}
}

func TestPythonStop(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "wait", "")
	h, events := startPython(t, newTestPython(t), job)
	expectStarted(t, job, events)
	waitForLogLine(t, job, "ready")
	h.Stop(guard, "stopped by the test")
	fin := expectFinished(t, job, events)
	if fin.OK || fin.ExitCode != -1 || fin.Err != "killed by signal: terminated" {
		t.Errorf("Finished = %+v, want killed by SIGTERM", fin)
	}
}

func TestPythonRunnerFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := NewPython(PythonConfig{RunnerDir: dir})
	path, err := p.runnerFile()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), "runner-") {
		t.Errorf("runner at %s, want runner-<hash>.py in %s", path, dir)
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, runnerSource) {
		t.Fatalf("runner file content differs (%v)", err)
	}
	// A cache cleaner removed it; another executor finds it damaged.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if again, err := p.runnerFile(); err != nil || again != path {
		t.Fatalf("runnerFile after removal = %q, %v", again, err)
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if other, err := NewPython(PythonConfig{RunnerDir: dir}).runnerFile(); err != nil || other != path {
		t.Fatalf("second executor's runner = %q, %v", other, err)
	}
	if data, _ := os.ReadFile(path); !bytes.Equal(data, runnerSource) {
		t.Error("damaged runner file not rewritten")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("runner dir holds %d entries, want only the runner (no temporary files)", len(entries))
	}
}

func TestPythonRunnerFallsBackToDashC(t *testing.T) {
	t.Parallel()
	notADir := writeFile(t, t.TempDir(), "file", "")
	p := NewPython(PythonConfig{RunnerDir: filepath.Join(notADir, "runners")})
	job := newPythonJob(t, "bad_row", `{"row": 1}`)
	_, events := startPython(t, p, job)
	expectStarted(t, job, events)
	expectFailed(t, expectFinished(t, job, events), "ValueError: bad row 1")
	if log := readLog(t, job); !strings.Contains(log, `raise ValueError("bad row %d" % row)`) || strings.Contains(log, "<string>") {
		t.Errorf("traceback with -c should show the task's frames only:\n%s", log)
	}
}

func TestPythonStaleErrorFileIgnored(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "nothing", "")
	writeFile(t, filepath.Dir(job.Scratch), filepath.Base(job.Scratch)+errorSuffix, "old failure")
	expectOK(t, runPython(t, job), "")
	if _, err := os.Stat(job.Scratch + errorSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale error file not removed: %v", err)
	}
}

func TestPythonOutputCap(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "returns", `{"value": "0123456789"}`)
	job.MaxOutputBytes = 5
	fin := runPython(t, job)
	if fin.OK || fin.ExitCode != 0 || fin.Err != "output larger than 5 bytes" {
		t.Errorf("Finished = %+v, want the output cap's error", fin)
	}
}

// TestPythonEmptyInputType: Ork's way of declaring a function without
// arguments, input_type: {} (an object type without fields), runs it. The
// compiled object had no "fields" key and the runner failed with
// KeyError: 'fields'.
func TestPythonEmptyInputType(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "naive", `{}`)
	job.Python.InputType = json.RawMessage(`{}`)
	job.Python.OutputType = json.RawMessage(`"datetime_notz"`)
	expectOK(t, runPython(t, job), `"2024-01-02T03:04:05"`)
}

// TestPythonTypeMismatchWarns: without CheckTypes (the default, as Ork
// checks types only when the file loads), a value that does not match its
// type leaves a warning line in the log and the task goes on.
func TestPythonTypeMismatchWarns(t *testing.T) {
	t.Parallel()
	job := newPythonJob(t, "returns", `{"value": "x"}`)
	job.Python.InputType = json.RawMessage(`{"value": "int"}`)
	job.Python.OutputType = json.RawMessage(`{"total": "int"}`)
	expectOK(t, runPython(t, job), `"x"`)
	log, err := os.ReadFile(job.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`orkwal: warning: input "value": expected int, got str (types are enforced only with check_types: true)`,
		`orkwal: warning: output: expected object, got str`,
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
