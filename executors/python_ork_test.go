package executors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// orkCallsPy holds functions called the way Ork's runner calls them.
const orkCallsPy = `import dataclasses

@dataclasses.dataclass
class Point:
    x: int
    y: int

def add(a, b):
    return a + b

def takes_model(p: Point):
    return {"kind": type(p).__name__, "sum": p.x + p.y}

def takes_dict(data):
    return {"kind": type(data).__name__, "keys": sorted(data)}

def bad_model(p: Point):
    return {"kind": type(p).__name__}

def no_args():
    return "none"

def named_one(x):
    return x

def everything(**kw):
    return sorted(kw)
`

// TestPythonCallsTheOrkWay: the inputs a function's parameters name go to
// it as keywords (others are left out); a function of one parameter no
// input names gets Annotation(**inputs), or the dict; **kwargs gets all.
func TestPythonCallsTheOrkWay(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "calls.py", orkCallsPy)
	for _, tc := range []struct{ function, inputs, want string }{
		{"add", `{"a": 2, "b": 3, "extra": 1}`, `5`},
		{"takes_model", `{"x": 1, "y": 2}`, `{"kind": "Point", "sum": 3}`},
		{"takes_dict", `{"x": 1, "y": 2}`, `{"kind": "dict", "keys": ["x", "y"]}`},
		{"bad_model", `{"x": 1}`, `{"kind": "dict"}`}, // Point(x=1) fails: the dict
		{"no_args", `{"x": 1}`, `"none"`},
		{"named_one", `{"x": 7, "y": 8}`, `7`},
		{"everything", `{"b": 1, "a": 2}`, `["a", "b"]`},
	} {
		t.Run(tc.function, func(t *testing.T) {
			t.Parallel()
			job := newPythonJob(t, tc.function, tc.inputs)
			job.Python.File = file
			expectOK(t, runPython(t, job), tc.want)
		})
	}
}

// Not parallel: it puts a fake uv first in PATH.
func TestPythonUsesUvInAProject(t *testing.T) {
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	// The fake uv notes its arguments and runs what follows "--project DIR".
	writeFile(t, bin, "uv", "#!/bin/sh\necho \"$*\" >> "+calls+"\nshift 3\nshift\nexec "+testInterpreter()+" \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "uv"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	project, plain := t.TempDir(), t.TempDir()
	writeFile(t, project, "pyproject.toml", "[project]\nname = \"x\"\n")
	for _, tc := range []struct {
		name, dir, interpreter string
		uv                     bool
	}{
		{"project", project, "", true},
		{"no pyproject.toml", plain, "", false},
		{"interpreter given", project, testInterpreter(), false},
	} {
		os.Remove(calls)
		job := newPythonJob(t, "attempt", "")
		job.Python.Project, job.Python.Interpreter = tc.dir, tc.interpreter
		expectOK(t, runPython(t, job), `{"ork": 1, "orkwal": 1}`)
		got, _ := os.ReadFile(calls)
		if want := "run --project " + tc.dir + " python3 "; tc.uv != strings.HasPrefix(string(got), want) {
			t.Errorf("%s: uv called with %q, want uv %v (%q)", tc.name, got, tc.uv, want)
		}
	}
}

// TestPythonOrkSDKWhenNotInstalled: a task written for Ork imports its SDK
// (ork_sdk) without it installed and gets orkwal's: its deferrables give
// the descriptors' JSON, with Ork's field names.
func TestPythonOrkSDKWhenNotInstalled(t *testing.T) {
	t.Parallel()
	file := writeFile(t, t.TempDir(), "sdk.py", `from ork_sdk import CustomHttp, BigQueryJob

def defer():
    return {"deferred": [CustomHttp(url="mock://success/j", completion_value="success").to_dict(),
                         BigQueryJob(project="p", job_id="j", location="US").to_dict()]}
`)
	job := newPythonJob(t, "defer", `{}`)
	job.Python.File = file
	expectOK(t, runPython(t, job), `{"deferred": [{"url": "mock://success/j", "method": "GET", "headers": {}, "success_status_codes": [200], `+
		`"failure_value": null, "service_type": "custom_http", "job_id": "mock://success/j", "status_field": "status", "success_value": "success"}, `+
		`{"project": "p", "job_id": "j", "location": "US", "service_type": "bigquery"}]}`)
}
