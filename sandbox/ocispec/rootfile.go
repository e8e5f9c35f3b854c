package ocispec

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/sandbox"
)

// maxRootFileSize bounds how much of an image's passwd or group file is
// read: real ones are a few KiB, and an image must not make the runtime
// read without end.
const maxRootFileSize = 4 << 20

// readRootFile reads name (relative, e.g. "etc/passwd") from inside the
// directory root. Every path component, symbolic links included, is
// resolved as if root were "/" (openat2 RESOLVE_IN_ROOT), so nothing
// outside root can be reached; /proc-style magic links are refused. A
// missing file reads as nil. Only regular files are read (a FIFO or a
// device planted by the image is an error, never a blocking or endless
// read).
func readRootFile(root, name string) ([]byte, error) {
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		err = &os.PathError{Op: "open", Path: root, Err: err}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("rootfs: %w: %w", err, sandbox.ErrInvalid)
		}
		return nil, fmt.Errorf("rootfs: %w", err)
	}
	defer unix.Close(dirfd)

	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	var fd int
	for attempt := 0; ; attempt++ {
		fd, err = unix.Openat2(dirfd, name, how)
		// EAGAIN: a concurrent rename raced the lookup; EINTR: a signal.
		if (err == unix.EAGAIN || err == unix.EINTR) && attempt < 16 {
			continue
		}
		break
	}
	path := root + "/" + name
	if err != nil {
		if err == unix.ENOENT {
			return nil, nil
		}
		return nil, fmt.Errorf("open %s inside its root: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): %w", path, st.Mode().Type(), sandbox.ErrInvalid)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRootFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxRootFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", path, maxRootFileSize, sandbox.ErrInvalid)
	}
	return b, nil
}
