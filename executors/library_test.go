package executors

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// taskLibC is a shared library with Ork's C ABI: ork_task_run answers
// its input inside {"got": ...}, and crashes or returns NULL on request.
const taskLibC = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ork_task_run(const char *input) {
    if (strstr(input, "crash")) { volatile int *p = 0; *p = 1; }
    if (strstr(input, "null")) return NULL;
    if (strstr(input, "text")) { char *s = malloc(8); strcpy(s, "not json"); return s; }
    printf("hello from C\n");
    fflush(stdout);
    size_t n = strlen(input) + 32;
    char *out = malloc(n);
    snprintf(out, n, "ORK_OUTPUT:{\"got\":%s}", input);
    return out;
}

void ork_task_free(char *p) { free(p); }
`

// buildLibrary compiles src into a shared object with gcc (on every CI
// machine) and returns its path.
func buildLibrary(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	c := writeFile(t, dir, "task.c", src)
	so := filepath.Join(dir, "libtask.so")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", so, c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return so
}

// TestLibraryTask: a library task's ork_task_run gets the inputs as JSON
// and its answer is the output; a library that crashes, returns NULL or
// no JSON, or lacks a function fails the task, and the daemon (this test)
// goes on.
func TestLibraryTask(t *testing.T) {
	t.Parallel()
	so := buildLibrary(t, taskLibC)
	partial := buildLibrary(t, "char *ork_task_run(const char *in) { return 0; }\n")
	for _, tc := range []struct{ name, lib, inputs, want, wantErr string }{
		{name: "output", lib: so, inputs: `{"numbers": [1, 2]}`, want: `{"got": {"numbers": [1, 2]}}`},
		{name: "no inputs", lib: so, inputs: `{}`, want: `{"got": {}}`},
		{name: "crash", lib: so, inputs: `{"do": "crash"}`, wantErr: "killed by signal: segmentation fault"},
		{name: "NULL", lib: so, inputs: `{"do": "null"}`, wantErr: "ork_task_run of " + so + " returned NULL"},
		{name: "not JSON", lib: so, inputs: `{"do": "text"}`, wantErr: "returned no JSON"},
		{name: "no ork_task_free", lib: partial, inputs: `{}`, wantErr: "does not export ork_task_free"},
		{name: "not a library", lib: "/etc/hostname", inputs: `{}`, wantErr: "load library /etc/hostname"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := newTestJob(t)
			job.Input = []byte(`{"params": {}, "inputs": ` + tc.inputs + `}`)
			job.Python = &PythonJob{Library: tc.lib, Interpreter: testInterpreter()}
			fin := runPython(t, job)
			if tc.wantErr != "" {
				if fin.OK || !strings.Contains(fin.Err, tc.wantErr) {
					t.Errorf("Finished = {OK:%v Exit:%d Err:%q}, want an error with %q", fin.OK, fin.ExitCode, fin.Err, tc.wantErr)
				}
				return
			}
			expectOK(t, fin, tc.want)
			if log := readLog(t, job); !strings.Contains(log, "hello from C") {
				t.Errorf("the library's stdout is not in the log: %q", log)
			}
		})
	}
}
