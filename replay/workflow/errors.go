package workflow

import (
	"fmt"
	"strings"
)

// Error is what Parse returns when it rejects a workflow. Its message has the
// form "<file>: <key path>: <reason> (line L, column C)" ("<file>: <reason>"
// for errors about the whole file; the position where it is known), e.g.
// `etl.yaml: tasks.load.depends_on: unknown task "trnsform" (line 7, column 17)`.
type Error struct {
	File string // file name as given to Parse, or "workflow" when it had none
	Path string // key path such as "tasks.load.depends_on"; empty for file-level errors
	Line int    // 1-based line of the offending YAML node, 0 when unknown
	Col  int    // 1-based column of the offending YAML node, 0 when unknown
	Msg  string // the reason
	Err  error  // underlying error (the YAML library's), if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File + ": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	switch {
	case e.Line > 0 && e.Col > 0:
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Col)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is what Parse returns when a file has more than one error: each,
// in file order, one a line. errors.As finds the first *Error in it.
type Errors []*Error

// maxErrors is how many errors of one file Parse reports; the last says
// how many more there were.
const maxErrors = 50

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// errorsOf is the error Parse returns for errs: nil, the one, or the list
// (at most maxErrors, the last counting those left out).
func errorsOf(file string, errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	if len(errs) > maxErrors {
		more := len(errs) - (maxErrors - 1)
		errs = append(errs[:maxErrors-1:maxErrors-1], &Error{File: file, Msg: fmt.Sprintf("and %d more errors", more)})
	}
	return Errors(errs)
}
