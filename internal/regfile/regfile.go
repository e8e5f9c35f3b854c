// Package regfile opens regular files without the runtime's poller.
//
// os.OpenFile tries to make every file it opens non-blocking and to
// register it with the runtime's network poller: on Linux that is five
// system calls more per file, spent finding out that a regular file
// cannot be polled. The kubelet writes several small files for every pod
// (etc-hosts, termination logs) and the fake runtime a log per container,
// so on a simulated node of a hundred pods a second those calls add up.
// Open does what os.OpenFile does for a regular file in one open(2).
package regfile

import (
	"os"
	"syscall"
)

// Open is os.OpenFile for a regular file, without registering it with the
// runtime's poller. O_CLOEXEC is added, as os.OpenFile adds it; an
// interrupted open(2) is retried. Errors are *os.PathError, as
// os.OpenFile's.
func Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), name), nil
		case err != syscall.EINTR:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// WriteFile is os.WriteFile through Open.
func WriteFile(name string, data []byte, perm os.FileMode) error {
	f, err := Open(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
