package workflow

// Error is what Parse returns when it rejects a workflow. Its message has the
// form "<file>: <key path>: <reason>" ("<file>: <reason>" for errors about the
// whole file), e.g. `etl.yaml: tasks.load.depends_on: unknown task "trnsform"`.
type Error struct {
	File string // file name as given to Parse, or "workflow" when it had none
	Path string // key path such as "tasks.load.depends_on"; empty for file-level errors
	Line int    // 1-based line of the offending YAML node, 0 when unknown
	Msg  string // the reason
	Err  error  // underlying error (the YAML library's), if any
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Path + ": " + e.Msg
}

func (e *Error) Unwrap() error { return e.Err }
