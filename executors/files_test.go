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

// TestRemoveScratch: every scratch file of the attempt goes, whichever
// exist, and a folder a task made in the place of one; another attempt's
// files and the run's folder stay; a prefix with no files, or none, is no
// error.
func TestRemoveScratch(t *testing.T) {
	root := t.TempDir()
	one, other := filepath.Join(root, "t.1"), filepath.Join(root, "t.2")
	for _, suffix := range scratchSuffixes {
		for _, prefix := range []string{one, other} {
			if err := os.WriteFile(prefix+suffix, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A task made a folder where its output file goes.
	if err := os.Remove(one + outputSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(one+outputSuffix, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{one, filepath.Join(root, "gone"), ""} {
		if err := RemoveScratch(prefix); err != nil {
			t.Fatalf("remove %q: %v", prefix, err)
		}
	}
	for _, suffix := range scratchSuffixes {
		if _, err := os.Stat(one + suffix); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", one+suffix, err)
		}
		if _, err := os.Stat(other + suffix); err != nil {
			t.Errorf("the other attempt's %s: %v", other+suffix, err)
		}
	}
}
