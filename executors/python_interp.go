package executors

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Python interpreters are resolved once, not at every attempt: a name such
// as python3 is looked up in PATH and then asked for sys.executable, the
// binary that really runs. Behind a version manager's shim (pyenv, asdf)
// the name is a script that costs most of a second to pick a version;
// the binary it picks starts at once. The answer is kept per name, PATH
// and working folder (a shim may pick another version in a folder with a
// .python-version), and asked again when the shim or the binary changes on
// disk (an upgrade, a `pyenv global` that rewrites the shim's target, a
// removed version): a stat of each per attempt tells.

// resolveTimeout bounds the one run of an interpreter that resolves it.
const resolveTimeout = 30 * time.Second

// interpreters resolves Python interpreters; safe for concurrent use.
type interpreters struct {
	log *slog.Logger

	mu      sync.Mutex
	entries map[interpKey]*interpEntry // guarded by mu
}

type interpKey struct{ name, path, dir string }

// interpEntry is one resolved interpreter; its own mutex makes attempts
// that start together wait for one resolution.
type interpEntry struct {
	mu  sync.Mutex
	res *resolvedInterp // nil until resolved; guarded by mu
}

type resolvedInterp struct {
	found, exe     string // the name looked up in PATH; the binary it runs
	foundID, exeID fileID
}

// fileID tells whether a file changed: its inode, size and modification time.
type fileID struct {
	ino, size, mtime int64
}

// idOf is the fileID of a stat: a rewrite changes the modification time,
// a replacement the inode.
func idOf(st *unix.Stat_t) fileID {
	return fileID{ino: int64(st.Ino), size: st.Size, mtime: st.Mtim.Nano()}
}

func statID(path string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileID{}, false
	}
	return idOf(&st), true
}

// current reports whether neither file changed since the resolution.
func (r *resolvedInterp) current() bool {
	f, ok1 := statID(r.found)
	e, ok2 := statID(r.exe)
	return ok1 && ok2 && f == r.foundID && e == r.exeID
}

// resolve returns the binary that runs the interpreter name (a name looked
// up in PATH, or a path) in the folder dir ("" = the daemon's).
func (in *interpreters) resolve(name, dir string) (string, error) {
	key := interpKey{name, os.Getenv("PATH"), dir}
	in.mu.Lock()
	if in.entries == nil {
		in.entries = map[interpKey]*interpEntry{}
	}
	e := in.entries[key]
	if e == nil {
		e = &interpEntry{}
		in.entries[key] = e
	}
	in.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.res != nil && e.res.current() {
		return e.res.exe, nil
	}
	again := e.res != nil
	res, err := resolveInterp(name, dir)
	if err != nil {
		e.res = nil
		return "", err
	}
	e.res = res
	in.logResolved(name, dir, res, again)
	return res.exe, nil
}

func (in *interpreters) logResolved(name, dir string, res *resolvedInterp, again bool) {
	msg := "python interpreter resolved"
	if again {
		msg = "python interpreter changed on disk, resolved again"
	}
	if in.log != nil {
		in.log.Info(msg, "interpreter", name, "found", res.found, "runs", res.exe, "folder", dir)
	}
}

// resolveInterp looks name up and asks it for sys.executable. When it
// cannot say (not a CPython, or it fails), the name's own path is used.
func resolveInterp(name, dir string) (*resolvedInterp, error) {
	if strings.Contains(name, "/") && !filepath.IsAbs(name) && dir != "" {
		name = filepath.Join(dir, name) // relative to the task's folder, where it runs
	}
	found, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("python interpreter %q: %w", name, err)
	}
	if found, err = filepath.Abs(found); err != nil {
		return nil, fmt.Errorf("python interpreter %q: %w", name, err)
	}
	exe := found
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, found, "-c", "import sys; print(sys.executable)")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil {
		if p := strings.TrimSpace(string(out)); filepath.IsAbs(p) {
			exe = p
		}
	}
	foundID, ok1 := statID(found)
	exeID, ok2 := statID(exe)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("python interpreter %q: %s or %s vanished while resolving it", name, found, exe)
	}
	return &resolvedInterp{found: found, exe: exe, foundID: foundID, exeID: exeID}, nil
}
