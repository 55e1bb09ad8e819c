package main

import (
	"io"
	"os"
	"strconv"
)

// isTerminal reports whether w is a terminal (a character device), where
// `trigger --wait` draws a live view rather than progress lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// termSize is a terminal's size in character cells.
type termSize struct{ cols, rows int }

// terminalSize asks the terminal behind w for its size, then COLUMNS and
// LINES, else assumes 80x24.
func terminalSize(w io.Writer) termSize {
	if f, ok := w.(*os.File); ok {
		if cols, rows, ok := winsize(f); ok && cols > 0 && rows > 0 {
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
