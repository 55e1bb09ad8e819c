package main

import (
	"strings"
	"testing"
)

// TestRunIDPrefix: every command that takes a run takes a unique prefix of
// its id; an ambiguous one is refused, listing the runs it starts.
func TestRunIDPrefix(t *testing.T) {
	url := cliApplied(t)
	a, b := cliTriggered(t, url), cliTriggered(t, url)
	short := a[:24]
	out, _ := mustCLI(t, exitOK, "show", short, "--addr", url)
	if !strings.Contains(out, "run:      "+a) {
		t.Fatalf("show %s:\n%s", short, out)
	}
	mustCLI(t, exitOK, "logs", "--addr", url, strings.ToUpper(short), "extract")
	mustCLI(t, exitFailure, "cancel", "--addr", url, b[:24]) // found; a finished run cannot be cancelled
	_, errOut := mustCLI(t, exitUsage, "show", "0", "--addr", url)
	for _, want := range []string{`run id prefix "0" is ambiguous`, a, b} {
		if !strings.Contains(errOut, want) {
			t.Errorf("ambiguous prefix: no %q in\n%s", want, errOut)
		}
	}
	_, errOut = mustCLI(t, exitNotFound, "show", "fff", "--addr", url)
	if !strings.Contains(errOut, `no run id starts with "fff"`) {
		t.Errorf("unknown prefix:\n%s", errOut)
	}
}
