package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// resolveFlags keep a path walk inside the directory it starts from:
// absolute symlinks, ".." above it and /proc magic links all fail.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS

// bindSubPath opens sub inside the volume at volPath without ever leaving
// it, creating missing directories, and bind mounts what it opened onto
// <pod>/volume-subpaths/<volume>/<container>/<index>, which it returns.
func (m *Manager) bindSubPath(uid types.UID, volume, container string, index int, volPath, sub string) (string, error) {
	if err := checkName(container); err != nil {
		return "", fmt.Errorf("invalid container name: %w", err)
	}
	if err := checkName(volume); err != nil {
		return "", fmt.Errorf("invalid volume name: %w", err)
	}
	root, err := unix.Open(volPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open volume %q at %s: %w", volume, volPath, err)
	}
	defer unix.Close(root)

	sub = filepath.Clean(sub)
	fd, err := openBeneath(root, sub, unix.O_PATH)
	if errors.Is(err, unix.ENOENT) {
		if err = mkdirBeneath(root, sub); err != nil {
			return "", subPathError(volume, container, sub, "failed to create subPath directory", err)
		}
		fd, err = openBeneath(root, sub, unix.O_PATH)
	}
	if err != nil {
		return "", subPathError(volume, container, sub, "cannot open subPath", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("stat subPath %q of volume %q: %w", sub, volume, err)
	}

	target := filepath.Join(m.podDir(uid), subPathsDirName, volume, container, strconv.Itoa(index))
	mounted, err := m.mnt.isMountPoint(target)
	if err != nil {
		return "", fmt.Errorf("check mount %s: %w", target, err)
	}
	if mounted {
		var tst unix.Stat_t
		if unix.Lstat(target, &tst) == nil && tst.Dev == st.Dev && tst.Ino == st.Ino {
			return target, nil // still bound to the same file
		}
		if err := m.mnt.unmount(target); err != nil {
			return "", err
		}
	}
	if err := prepareTarget(target, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return "", err
	}
	if err := m.mnt.bindFD(fd, target); err != nil {
		_ = os.Remove(target)
		return "", subPathError(volume, container, sub, "cannot bind mount subPath", err)
	}
	return target, nil
}

// subPathError describes a subPath failure; escapes through symlinks say so.
func subPathError(volume, container, sub, what string, err error) error {
	if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ELOOP) {
		return tagWrap(ErrSubPath, err, "subPath %q of volume %q for container %q escapes the volume", sub, volume, container)
	}
	return tagWrap(ErrSubPath, err, "%s %q of volume %q for container %q", what, sub, volume, container)
}

// openBeneath opens p relative to dirfd without leaving dirfd's tree.
func openBeneath(dirfd int, p string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	for range 16 { // EAGAIN: a concurrent rename raced the walk; retry
		fd, err := unix.Openat2(dirfd, p, &how)
		if !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

// mkdirBeneath creates the missing directories of p below dirfd one by one,
// each with the mode of the volume root, never following a symlink out.
func mkdirBeneath(root int, p string) error {
	var rst unix.Stat_t
	if err := unix.Fstat(root, &rst); err != nil {
		return err
	}
	perm := rst.Mode & 0o7777
	parent, err := unix.Dup(root)
	if err != nil {
		return err
	}
	defer func() { unix.Close(parent) }()
	parts := strings.Split(p, "/")
	for i, name := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fd, err := openBeneath(root, prefix, unix.O_PATH|unix.O_DIRECTORY)
		if errors.Is(err, unix.ENOENT) {
			if err := unix.Mkdirat(parent, name, perm); err != nil && !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("mkdir %s: %w", prefix, err)
			}
			if err := chmodNoFollow(parent, name, perm); err != nil {
				return fmt.Errorf("chmod %s: %w", prefix, err)
			}
			fd, err = openBeneath(root, prefix, unix.O_PATH|unix.O_DIRECTORY)
		}
		if err != nil {
			return err
		}
		unix.Close(parent)
		parent = fd
	}
	return nil
}

// chmodNoFollow sets the mode of the directory name in dirfd, refusing a
// symlink put there in the meantime; the mode must not depend on the umask.
func chmodNoFollow(dirfd int, name string, perm uint32) error {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	fd, err := unix.Openat2(dirfd, name, &how)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, perm)
}

// prepareTarget makes target a directory or an empty file to bind mount
// onto, replacing a leftover of the other kind.
func prepareTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(target), err)
	}
	if fi, err := os.Lstat(target); err == nil {
		if fi.IsDir() == dir {
			return nil
		}
		if err := os.Remove(target); err != nil {
			return fmt.Errorf("replace %s: %w", target, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dir {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", target, err)
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return fmt.Errorf("create %s: %w", target, err)
	}
	return f.Close()
}
