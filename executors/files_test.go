package executors

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLookPathCacheFollowsRemoval: a name found in PATH is remembered, and
// a remembered path that is gone (or no longer executable) is searched
// again, finding the next one in PATH.
func TestLookPathCacheFollowsRemoval(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(d, "orkwal-lp"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", a+string(os.PathListSeparator)+b)
	for i := 0; i < 2; i++ { // the second answer comes from the cache
		if p, err := lookPath("orkwal-lp"); err != nil || p != filepath.Join(a, "orkwal-lp") {
			t.Fatalf("lookup %d: %q, %v; want the one in %s", i, p, err, a)
		}
	}
	os.Remove(filepath.Join(a, "orkwal-lp"))
	if p, err := lookPath("orkwal-lp"); err != nil || p != filepath.Join(b, "orkwal-lp") {
		t.Fatalf("after removing the cached one: %q, %v; want the one in %s", p, err, b)
	}
	os.Chmod(filepath.Join(b, "orkwal-lp"), 0o644)
	if p, err := lookPath("orkwal-lp"); err == nil {
		t.Fatalf("with no executable left: %q, want an error", p)
	}
}

// TestRemoveScratch: the usual folder (the contract's files), a folder the
// task left more in, and one already gone.
func TestRemoveScratch(t *testing.T) {
	root := t.TempDir()
	plain := filepath.Join(root, "t.1")
	more := filepath.Join(root, "t.2")
	for _, d := range []string{plain, more} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, inputFileName), []byte("{}"), 0o644)
	}
	os.WriteFile(filepath.Join(plain, outputFileName), []byte("{}"), 0o644)
	os.MkdirAll(filepath.Join(more, "sub"), 0o755)
	os.WriteFile(filepath.Join(more, "sub", "x"), []byte("x"), 0o644)
	for _, d := range []string{plain, more, filepath.Join(root, "gone")} {
		if err := RemoveScratch(d); err != nil {
			t.Fatalf("remove %s: %v", d, err)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", d, err)
		}
	}
}
