package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/orkwal/orkwal"

// allowedImports reads the table of docs/architecture.md: package → the
// orkwal packages it may import ("any" for every one).
func allowedImports(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var may []string
		for _, m := range strings.Split(cells[3], ",") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(m), "`"); ok {
				may = append(may, name[:strings.Index(name, "`")])
			} else if strings.TrimSpace(m) == "any" {
				may = append(may, "any")
			}
		}
		table[pkg] = may
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return table
}

// testOnly are the packages only tests may import (docs/architecture.md):
// no package's own code, even one that may import any.
var testOnly = []string{"internal/benchtest"}

// TestImportsFollowTheTable fails on an import between orkwal packages that
// docs/architecture.md does not allow, on a package it does not list, and
// on an import of a test-only package by a package's own code.
func TestImportsFollowTheTable(t *testing.T) {
	root := filepath.Join("..", "..")
	table := allowedImports(t, filepath.Join(root, "docs", "architecture.md"))
	if len(table) < 5 {
		t.Fatalf("docs/architecture.md: read %d rows of the imports table; its shape changed?", len(table))
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		may, ok := table[pkg]
		if !ok {
			t.Errorf("package %s is not in docs/architecture.md's imports table: add its row (what it owns, what it may import)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if ok && slices.Contains(testOnly, dep) {
				t.Errorf("%s imports %s, which only tests may import", pkg, dep)
				continue
			}
			if !ok || allows(may, dep) {
				continue
			}
			t.Errorf("%s imports %s, which docs/architecture.md does not allow (it may import: %s)", pkg, dep, strings.Join(may, ", "))
		}
	}
}

func allows(may []string, dep string) bool {
	for _, m := range may {
		if m == "any" || m == dep {
			return true
		}
	}
	return false
}
