package nsinit

import (
	"errors"
	"fmt"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Paths inside the container are resolved with openat2(RESOLVE_IN_ROOT)
// relative to a descriptor of the rootfs: ".." and absolute symlinks stop
// at the rootfs, so a hostile image cannot redirect a mount onto the host.
// Mounts then target the resolved descriptor through /proc/self/fd/N
// (the host's procfs: the init still sees it before pivot_root), which
// closes the window between resolving a path and mounting on it.

// procFD is the magic link naming fd.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// openIn opens p (absolute or relative, interpreted inside the root) as an
// O_PATH descriptor resolved inside root.
func openIn(root int, p string, flags uint64) (int, error) {
	how := unix.OpenHow{
		Flags:   flags | unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 8 {
		fd, err := unix.Openat2(root, p, &how)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // a concurrent rename; retry
		}
		if errors.Is(err, unix.ENOSYS) {
			return -1, fmt.Errorf("openat2 (needs Linux 5.6): %w", err)
		}
		return fd, err
	}
	return -1, unix.EAGAIN
}

// maxLinks bounds how many dangling symlinks mount point creation follows.
const maxLinks = 40

// mkdirAllIn returns a descriptor of directory p inside root, creating it
// and its missing parents (mode 0755). A dangling symlink on the way is
// followed, inside the root, and its target created.
func mkdirAllIn(root int, p string) (int, error) {
	links := 0
	return mkdirAllLinks(root, p, &links)
}

func mkdirAllLinks(root int, p string, links *int) (int, error) {
	p = path.Clean("/" + p)
	fd, err := openIn(root, p, unix.O_DIRECTORY)
	if err == nil || !errors.Is(err, unix.ENOENT) || p == "/" {
		return fd, err
	}
	parent, err := mkdirAllLinks(root, path.Dir(p), links)
	if err != nil {
		return -1, err
	}
	err = unix.Mkdirat(parent, path.Base(p), 0o755)
	if errors.Is(err, unix.EEXIST) {
		err = createLinkTarget(root, parent, p, links, true)
	}
	unix.Close(parent)
	if err != nil {
		return -1, err
	}
	return openIn(root, p, unix.O_DIRECTORY)
}

// createLinkTarget handles p (in parent) existing though it did not
// resolve a moment ago: a dangling symlink gets its target created inside
// the root; anything else was created concurrently and is left for the
// caller to open.
func createLinkTarget(root, parent int, p string, links *int, dir bool) error {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(parent, path.Base(p), buf)
	if errors.Is(err, unix.EINVAL) {
		return nil // not a symlink
	}
	if err != nil {
		return fmt.Errorf("read link %s: %w", p, err)
	}
	if *links++; *links > maxLinks {
		return fmt.Errorf("%s: %w", p, unix.ELOOP)
	}
	target := string(buf[:n])
	if !path.IsAbs(target) {
		target = path.Join(path.Dir(p), target)
	}
	if dir {
		fd, err := mkdirAllLinks(root, target, links)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	fd, err := fileIn(root, target, links)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// mountPoint returns a descriptor of p inside root, creating a directory
// (dir) or an empty file there when it is missing, with missing parents.
func mountPoint(root int, p string, dir bool) (int, error) {
	links := 0
	if dir {
		return mkdirAllLinks(root, p, &links)
	}
	return fileIn(root, p, &links)
}

// fileIn returns a descriptor of p inside root, creating an empty file
// (and missing parents) when it is missing.
func fileIn(root int, p string, links *int) (int, error) {
	p = path.Clean("/" + p)
	fd, err := openIn(root, p, 0)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	parent, err := mkdirAllLinks(root, path.Dir(p), links)
	if err != nil {
		return -1, err
	}
	err = unix.Mknodat(parent, path.Base(p), unix.S_IFREG|0o644, 0)
	if errors.Is(err, unix.EEXIST) {
		err = createLinkTarget(root, parent, p, links, false)
	}
	unix.Close(parent)
	if err != nil {
		return -1, err
	}
	return openIn(root, p, 0)
}

// isDirFD reports whether fd is a directory.
func isDirFD(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// remountBind changes the flags of the bind mount on fd's path (fd must
// name the mount's root, i.e. be opened after mounting). When the kernel
// refuses to drop a flag the mount has (EPERM, e.g. locked flags), it
// retries keeping the mount's current flags.
func remountBind(fd int, flags uintptr) error {
	target := procFD(fd)
	err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|flags, "")
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	var st unix.Statfs_t
	if serr := unix.Fstatfs(fd, &st); serr != nil {
		return err
	}
	return unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|flags|statfsMountFlags(int64(st.Flags)), "")
}

// remountReadOnly makes the mount on fd read-only, keeping its other
// flags.
func remountReadOnly(fd int) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return err
	}
	return unix.Mount("", procFD(fd), "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|statfsMountFlags(int64(st.Flags)), "")
}
