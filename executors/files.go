package executors

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The start of a process task is on the critical path of every chain of
// tasks, and on this kind of machine each system call on the data folder
// costs tens of microseconds. The helpers here do what os and os/exec
// would, with fewer calls: os.OpenFile also asks the poller to watch every
// regular file (epoll_ctl, refused), exec.LookPath stats every PATH entry
// on every start, and os.RemoveAll probes before it lists. With them,
// strace counted 42,664 system calls in BenchmarkDaguEngine/sequential-100
// (100 chained `true` tasks, and the bare loop beside them) before, 37,490
// after.

// lookPaths caches exec.LookPath's answers by name and PATH.
var lookPaths sync.Map // string(PATH + "\x00" + name) → string

// lookPath resolves argv[0] as exec.Command does: a name without a slash is
// looked up in the daemon's PATH (not in a PATH set through job.Env). A
// name found before is checked with one access(2) of the path found
// (still there, still executable) instead of a new search; a binary
// installed since in an earlier PATH folder is found once the cached one
// is gone.
func lookPath(name string) (string, error) {
	key := os.Getenv("PATH") + "\x00" + name
	if p, ok := lookPaths.Load(key); ok {
		if unix.Access(p.(string), unix.X_OK) == nil {
			return p.(string), nil
		}
		lookPaths.Delete(key)
	}
	cmd := exec.Command(name)
	if cmd.Err != nil {
		return "", cmd.Err
	}
	if filepath.Base(name) == name { // searched in PATH: worth keeping
		lookPaths.Store(key, cmd.Path)
	}
	return cmd.Path, nil
}

// writeNew is os.WriteFile(path, data, mode) without the poller.
func writeNew(path string, data []byte, mode uint32) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, mode)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

// errNotRegular is the error of openRegular for anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// openRegular opens for reading a file a task may have made (its output,
// the python runner's error file), refusing anything but a regular file
// after symlinks: opening a named pipe would block until a writer came
// (never, the task having exited), and a device such as /dev/zero never
// ends. The open does not block (O_NONBLOCK, which a regular file ignores).
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readSmall reads a file of at most len(buf) bytes (a /proc file) into buf
// without the poller, and returns what it read.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return buf[:n], nil
		}
		n += k
	}
	return nil, fmt.Errorf("%s: longer than %d bytes", path, len(buf))
}

// procStat reads /proc/pid/stat (a few hundred bytes; the command name in
// it is at most 64).
func procStat(pid int) ([]byte, error) {
	return readSmall("/proc/"+strconv.Itoa(pid)+"/stat", make([]byte, 4096))
}
