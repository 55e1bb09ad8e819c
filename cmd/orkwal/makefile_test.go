package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestMakefile checks what `make help` and `make run` do without needing
// make: help texts are printed as written (a $(VAR) in one is printed
// unexpanded), and run execs the binary it built (a `go run` would leave
// its child, the daemon, running when stopped).
func TestMakefile(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	help := regexp.MustCompile(`(?m)^([a-z]+):.*## (.*)$`)
	recipes := map[string][]string{}
	var target string
	for _, line := range strings.Split(string(data), "\n") {
		if m := help.FindStringSubmatch(line); m != nil {
			target = m[1]
			if strings.Contains(m[2], "$(") {
				t.Errorf("make help would print %q unexpanded (target %s)", m[2], target)
			}
			continue
		}
		if strings.HasPrefix(line, "\t") && target != "" {
			recipes[target] = append(recipes[target], strings.TrimSpace(line))
		} else if !strings.HasPrefix(line, "\t") {
			target = ""
		}
	}
	run := recipes["run"]
	if len(run) != 1 || !strings.HasPrefix(run[0], "exec $(BIN) run ") {
		t.Errorf("make run's recipe is %q, want one line: exec $(BIN) run ...", run)
	}
	if !strings.Contains(string(data), "\nrun: build ") {
		t.Error("make run does not build first")
	}
}
