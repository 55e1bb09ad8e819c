package executors

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed" // runner.py
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PythonJob is a Python function to call, Ork style (executor: python),
// or a shared library's ork_task_run (executor: library, see Library).
// Exactly one of File, Module and Library is set.
type PythonJob struct {
	// Library is the absolute path of a shared object exporting Ork's C
	// ABI: char *ork_task_run(const char *inputs_json), whose result (JSON,
	// optionally after "ORK_OUTPUT:") is the output, freed with
	// void ork_task_free(char *). The runner loads it with ctypes, in the
	// interpreter's process: a library that crashes ends that process,
	// never the daemon, and the daemon needs no cgo.
	Library string
	// File is the absolute path of a .py file, imported under its stem with
	// its folder first on sys.path (as `python3 file.py` would).
	File string
	// Module is a dotted module name, imported with SysPath (absolute
	// folders, e.g. the workflow's) first on sys.path.
	Module  string
	SysPath []string
	// Function is the name of the function to call; "" = "main" (Ork's
	// default).
	Function string
	// Interpreter is the Python to run, looked up in the daemon's PATH;
	// "" = "python3", or `uv run --project Project python3` when Project
	// holds a pyproject.toml and uv is in the daemon's PATH (Ork's rule).
	// It must be Python 3.8 or later.
	Interpreter string
	// Project is the workflow's folder, "" when it has none.
	Project string
	// InputType and OutputType are optional type descriptions (the
	// workflow's input_type and output_type, YAML converted to JSON; the
	// grammar is at the top of python_types.go). Types holds the workflow's
	// top-level named types by name, in the same form. Nil = not checked.
	InputType  json.RawMessage
	OutputType json.RawMessage
	Types      map[string]json.RawMessage
	// CheckTypes makes a value that does not match its type fail the
	// task; otherwise the mismatch is a warning line in the task's log and
	// the task goes on (Ork checks types only when the file loads).
	CheckTypes bool
}

// Suffixes of the python executor's files, after Job.Scratch.
const (
	pythonSpecSuffix = ".python.json" // what runner.py runs (runnerSpec)
	errorSuffix      = ".error.txt"   // runner.py's one-line failure reason
	maxErrorBytes    = 4096           // what is read of error.txt
)

// runnerSource is the runner given to the interpreter.
//
//go:embed runner.py
var runnerSource []byte

// PythonConfig configures a Python executor. The zero value is usable.
type PythonConfig struct {
	// KillGrace is used by Handle.Stop when called with grace <= 0.
	// Zero means DefaultKillGrace.
	KillGrace time.Duration
	// RunnerDir is where the embedded runner is written, once, as
	// runner-<hash>.py. "" = os.UserCacheDir()/orkwal. When the folder is
	// not usable, the runner is passed to the interpreter with -c instead.
	RunnerDir string
	// Logger: see ProcessConfig.Logger.
	Logger *slog.Logger
	// Interpreter is the Python of tasks that name none (orkwal run
	// --python, ORKWAL_PYTHON): a name looked up in PATH or a path. ""
	// = python3. Whichever it is, it is resolved once (python_interp.go).
	Interpreter string
}

// Python runs Ork-style Python tasks: it calls a function of a file or
// module with the task's inputs as keyword arguments and records its return
// value as the task's output. Each attempt is a process run exactly as the
// Process executor runs one (own process group, Pdeathsig, log, contract
// environment), with the command `<interpreter> <runner.py> <spec>`.
//
// The runner (runner.py, embedded) reads ORKWAL_INPUT, a JSON object whose
// "inputs" member holds the keyword arguments ({"params": ..., "inputs":
// {name: value}, "upstream": ..., "item": ...}; a missing "inputs" calls the
// function without arguments). Values arrive as decoded JSON: a date or
// datetime is an ISO 8601 string. The return value is written to
// ORKWAL_OUTPUT as JSON, datetime/date/time as ISO 8601, dataclasses and
// pydantic models (model_dump) as objects; None writes no output; another
// value fails the task naming where it is. print() goes to the task log.
//
// An exception fails the task (exit 1): its traceback goes to the log and
// Finished.Err is its last line ("ValueError: bad row"). Import errors and
// a missing function fail it with a message naming them; a type mismatch
// (`input "count": expected int, got str`) fails it with CheckTypes, and
// is otherwise a warning line in its log.
//
// Ork compatibility: Ork's file/module/function task fields, its type names
// (str, int, float, bool, date, datetime_notz, datetime_tz, datetime_utc,
// types.<Name>, [T], {field: T}) and its call convention (function(**inputs))
// are kept; ORK_ATTEMPT, ORK_RUN_ID and the other ORK_* variables are set by
// the contract environment, so a task reading them runs unchanged.
type Python struct {
	cfg     PythonConfig
	proc    *Process
	interps interpreters

	mu     sync.Mutex
	runner string // path of the runner file once written; guarded by mu
}

// NewPython returns a Python executor, filling the defaults of cfg.
func NewPython(cfg PythonConfig) *Python {
	proc := NewProcess(ProcessConfig{KillGrace: cfg.KillGrace, Logger: cfg.Logger})
	return &Python{cfg: cfg, proc: proc, interps: interpreters{log: cfg.Logger}}
}

// runnerSpec is the file runner.py runs (pythonSpecSuffix).
type runnerSpec struct {
	File       string        `json:"file,omitempty"`
	Library    string        `json:"library,omitempty"`
	Module     string        `json:"module,omitempty"`
	SysPath    []string      `json:"sys_path,omitempty"`
	Function   string        `json:"function"`
	ErrorFile  string        `json:"error_file"`
	Types      compiledTypes `json:"types"`
	CheckTypes bool          `json:"check_types,omitempty"`
}

// Start checks job.Python, writes the runner's spec beside the scratch
// files and starts the interpreter as Process.Start does, with the same events. The
// Finished event of a task that failed carries the runner's reason.
func (p *Python) Start(job Job, report func(Event)) (Handle, error) {
	pp, err := p.Prepare(job)
	if err != nil {
		return nil, err
	}
	return pp.Start(report)
}

// Prepare writes the runner's spec and prepares the interpreter's process
// (see Preparer and Process.Prepare).
func (p *Python) Prepare(job Job) (Prepared, error) {
	errFile, err := p.prepare(&job)
	var pp *preparedProcess
	if err != nil {
		err = fmt.Errorf("start task %s: %w", job.TaskID, err)
	} else {
		pp, err = p.proc.prepare(job)
	}
	if err != nil {
		_ = RemoveScratch(job.Scratch) // what was prepared is not left behind
		return nil, err
	}
	return &preparedPython{pp, errFile}, nil
}

// preparedPython is a job of Python ready to be spawned.
type preparedPython struct {
	*preparedProcess
	errFile string
}

// Start spawns the interpreter; a Finished event of a task that failed
// carries the runner's reason.
func (pp *preparedPython) Start(report func(Event)) (Handle, error) {
	return pp.preparedProcess.Start(func(ev Event) {
		if ev.Kind == Finished {
			ev = withTaskError(ev, pp.errFile)
			ev.Cleaned = false // the runner's files are left to the engine
		}
		report(ev)
	})
}

// prepare validates job.Python, writes the runner spec and sets
// job.Command. It returns the path of the error file.
func (p *Python) prepare(job *Job) (string, error) {
	spec, err := newRunnerSpec(job.Python)
	if err != nil {
		return "", err
	}
	prefix, err := scratchPrefix(*job)
	if err != nil {
		return "", err
	}
	spec.ErrorFile = prefix + errorSuffix
	specPath := prefix + pythonSpecSuffix
	if err := writeJSON(specPath, spec); err != nil {
		return "", prepFailed(err)
	}
	if err := os.Remove(spec.ErrorFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", prepFailed(fmt.Errorf("remove stale error file: %w", err))
	}
	interpreter, err := p.interpreter(job.Python, job.Workdir)
	if err != nil {
		return "", err
	}
	job.Command = append(p.runnerCommand(interpreter), specPath)
	return spec.ErrorFile, nil
}

// newRunnerSpec checks py and compiles its types.
func newRunnerSpec(py *PythonJob) (runnerSpec, error) {
	switch {
	case py == nil:
		return runnerSpec{}, errors.New("no python task (Job.Python is nil)")
	case countSet(py.File, py.Module, py.Library) > 1:
		return runnerSpec{}, errors.New("python task has more than one of file, module and library")
	case countSet(py.File, py.Module, py.Library) == 0:
		return runnerSpec{}, errors.New("python task has neither file nor module")
	case py.File != "" && !filepath.IsAbs(py.File):
		return runnerSpec{}, fmt.Errorf("python file %q is not an absolute path", py.File)
	case py.Library != "" && !filepath.IsAbs(py.Library):
		return runnerSpec{}, fmt.Errorf("library %q is not an absolute path", py.Library)
	}
	types, err := compilePythonTypes(py)
	if err != nil {
		return runnerSpec{}, err
	}
	fn := py.Function
	if fn == "" {
		fn = "main"
	}
	return runnerSpec{File: py.File, Library: py.Library, Module: py.Module, SysPath: py.SysPath, Function: fn, Types: types,
		CheckTypes: py.CheckTypes}, nil
}

// countSet counts the non-empty strings.
func countSet(ss ...string) int {
	n := 0
	for _, s := range ss {
		if s != "" {
			n++
		}
	}
	return n
}

// writeJSON writes v as JSON to path.
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := writeScratch(path, data); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// runnerCommand returns the argv running the runner with interpreter (an
// argv), less the spec path: the runner file when it can be written, else
// -c.
func (p *Python) runnerCommand(interpreter []string) []string {
	path, err := p.runnerFile()
	if err != nil {
		return append(interpreter, "-c", string(runnerSource))
	}
	return append(interpreter, path)
}

// interpreter is the argv that starts py's Python in the folder dir: its
// Interpreter; else, as Ork does, `uv run` in a project (a workflow folder
// with a pyproject.toml) when uv is installed; else the configured one
// (python3 by default). A Python is resolved to the binary it runs, once.
func (p *Python) interpreter(py *PythonJob, dir string) ([]string, error) {
	name := py.Interpreter
	if name == "" && py.Project != "" && hasPyproject(py.Project) {
		if uv, err := lookPath("uv"); err == nil {
			return []string{uv, "run", "--project", py.Project, "python3"}, nil
		}
	}
	if name == "" {
		name = cmp.Or(p.cfg.Interpreter, "python3")
	}
	exe, err := p.interps.resolve(name, dir)
	if err != nil {
		return nil, err
	}
	return []string{exe}, nil
}

// pyprojects caches, by folder, whether it holds a pyproject.toml: looked
// at once per folder while the daemon runs.
var pyprojects sync.Map // string → bool

func hasPyproject(dir string) bool {
	if has, ok := pyprojects.Load(dir); ok {
		return has.(bool)
	}
	_, err := os.Stat(filepath.Join(dir, "pyproject.toml"))
	pyprojects.Store(dir, err == nil)
	return err == nil
}

// runnerFile returns the path of the runner file, writing it if it is not
// there (the first time, or after a cache cleaner removed it).
func (p *Python) runnerFile() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runner != "" {
		if _, err := os.Stat(p.runner); err == nil {
			return p.runner, nil
		}
	}
	dir, err := p.runnerDir()
	if err != nil {
		return "", err
	}
	path, err := ensureRunnerFile(dir)
	if err != nil {
		return "", err
	}
	p.runner = path
	return path, nil
}

// runnerDir returns the configured runner folder or the default one.
func (p *Python) runnerDir() (string, error) {
	if p.cfg.RunnerDir != "" {
		return p.cfg.RunnerDir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("runner dir: %w", err)
	}
	return filepath.Join(cache, "orkwal"), nil
}

// ensureRunnerFile makes sure dir/runner-<hash>.py holds runnerSource,
// writing it atomically (temporary file, rename) when it does not.
func ensureRunnerFile(dir string) (string, error) {
	sum := sha256.Sum256(runnerSource)
	path := filepath.Join(dir, "runner-"+hex.EncodeToString(sum[:8])+".py")
	if data, err := os.ReadFile(path); err == nil && bytes.Equal(data, runnerSource) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create runner dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".runner-*.tmp")
	if err != nil {
		return "", fmt.Errorf("write runner: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, err = tmp.Write(runnerSource)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("write runner: %w", err)
	}
	return path, nil
}

// withTaskError replaces the Err of a failed exit with the runner's reason
// from errFile, when it wrote one.
func withTaskError(ev Event, errFile string) Event {
	if ev.OK || ev.ExitCode <= 0 {
		return ev
	}
	if msg := readErrorFile(errFile); msg != "" {
		ev.Err = msg
	}
	return ev
}

// readErrorFile returns the first maxErrorBytes of path, trimmed; "" when
// it cannot be read.
func readErrorFile(path string) string {
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxErrorBytes))
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(data)), "\uFFFD")
}
