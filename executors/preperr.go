package executors

import (
	"errors"
	"syscall"
)

// PrepareError is a failure of the daemon's own preparation of an attempt,
// not of the task: its input file or the python runner's spec could not be
// written, its log not opened, or its spawn was refused for want of
// resources (a full disk, too many open files, no memory or processes left:
// see resourceErrnos). Nothing of the task ran. The engine runs such an
// attempt again later, without spending the task's retries; tell it apart
// with errors.As, never by its text. A command that cannot be found or run,
// or a missing workdir, is the task's failure, not this.
type PrepareError struct {
	Err error
}

func (e *PrepareError) Error() string { return e.Err.Error() }
func (e *PrepareError) Unwrap() error { return e.Err }

// prepFailed marks err, if any, as a failure of the preparation.
func prepFailed(err error) error {
	if err == nil {
		return nil
	}
	return &PrepareError{Err: err}
}

// resourceErrnos are the errors of a spawn (or of a pipe or file an
// attempt needs) that say the box lacks a resource for now, not that the
// task is wrong.
var resourceErrnos = []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EMFILE, syscall.ENFILE,
	syscall.EAGAIN, syscall.ENOMEM, syscall.ENOBUFS}

// spawnFailed is a spawn's error: a PrepareError when the box lacked a
// resource (resourceErrnos), the task's own failure otherwise.
func spawnFailed(err error) error {
	for _, errno := range resourceErrnos {
		if errors.Is(err, errno) {
			return prepFailed(err)
		}
	}
	return err
}
