package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// LockFileName is the advisory lock file in a data folder.
const LockFileName = "LOCK"

// LockedError says which process holds a data folder. It matches ErrLocked.
type LockedError struct {
	Dir string
	PID string // as written in the lock file; "unknown" if unreadable
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("data folder %s is in use by pid %s", e.Dir, e.PID)
}

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock holds the advisory lock on a data folder: one writer at a time.
type Lock struct{ f *os.File }

// AcquireLock takes an exclusive flock on dir/LOCK without waiting and writes
// the holder's pid into it. The kernel drops the lock when the process dies,
// so a kill -9 never leaves a stale lock. If another process holds it, the
// error matches ErrLocked and names that process's pid.
func AcquireLock(dir string) (*Lock, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: open lock %s: %w", path, err)
	}
	if err := flockWaitingForDead(f); err != nil {
		pid := readPID(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("wal: lock %s: %w", path, err)
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("wal: write pid to %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// deadHolderWait bounds the wait for a lock whose recorded holder is dead.
const deadHolderWait = 2 * time.Second

// flockWaitingForDead takes the lock. If it is held but the pid recorded in
// the file is dead, the holder is a child the dead daemon was forking (it
// has every descriptor until exec or Pdeathsig, a few milliseconds), so it
// retries for up to deadHolderWait instead of refusing a restart that
// follows a kill -9.
func flockWaitingForDead(f *os.File) error {
	deadline := time.Now().Add(deadHolderWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || !holderDead(f) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holderDead reports whether the pid written in the lock file is gone.
func holderDead(f *os.File) bool {
	pid, err := strconv.Atoi(readPID(f))
	return err == nil && pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func readPID(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	if pid := string(bytes.TrimSpace(b[:n])); pid != "" {
		return pid
	}
	return "unknown"
}

func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
