package executors

import (
	"fmt"
	"os"
)

// holdScript is what a held process starts as (see Job.Hold): a shell that
// waits for a line on descriptor 3, closes it and becomes the task's
// program with exec, keeping its pid (so its process group, and the pid
// and start time the engine records, are the task's). End of file (the
// engine said no, or the daemon died) exits 125 before the program runs.
// $0 is the program's path, "$@" its arguments.
const holdScript = `IFS= read -r _ <&3 || exit 125; exec 3<&-; exec "$0" "$@"`

// heldStart is the shell and the pipe that hold a process back.
type heldStart struct {
	path string   // the shell
	argv []string // sh -c holdScript program args...
	r, w *os.File // the pipe: r is the child's descriptor 3
}

// holdBack wraps path and argv in the holding shell.
func holdBack(path string, argv []string) (*heldStart, error) {
	sh, err := lookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("hold: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("hold: %w", err)
	}
	return &heldStart{path: sh, argv: append([]string{"sh", "-c", holdScript, path}, argv[1:]...), r: r, w: w}, nil
}

// childEnd is the child's end of the pipe (nil: not held).
func (h *heldStart) childEnd() *os.File {
	if h == nil {
		return nil
	}
	return h.r
}

// spawned closes the child's end; once hold says true, one line lets the
// program run; false (or a spawn that failed) closes the pipe: the shell
// exits 125.
func (h *heldStart) spawned(hold <-chan bool, ok bool) {
	if h == nil {
		return
	}
	h.r.Close()
	if !ok {
		h.w.Close()
		return
	}
	go func() {
		if <-hold {
			h.w.Write([]byte("\n"))
		}
		h.w.Close()
	}()
}
