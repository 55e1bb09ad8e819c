package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable, and of its metadata only what reading
// the data back needs (fdatasync(2)): a commit that writes inside the tail
// segment's zero padding changes no size and allocates no block, so the
// inode is not written.
func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
