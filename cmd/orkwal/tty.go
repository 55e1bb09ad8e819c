package main

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal, where `trigger --wait` and
// `watch` draw a live view rather than progress lines. It asks the terminal
// itself (golang.org/x/term): a character device is not enough, /dev/null
// is one too.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// termSize is a terminal's size in character cells.
type termSize struct{ cols, rows int }

// terminalSize asks the terminal behind w for its size, then COLUMNS and
// LINES, else assumes 80x24.
func terminalSize(w io.Writer) termSize {
	if f, ok := w.(*os.File); ok {
		if cols, rows, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 && rows > 0 {
			return termSize{cols, rows}
		}
	}
	size := termSize{80, 24}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		size.cols = n
	}
	if n, err := strconv.Atoi(os.Getenv("LINES")); err == nil && n > 0 {
		size.rows = n
	}
	return size
}
