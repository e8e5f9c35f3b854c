package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// setupRootfs builds the container's mount tree in the init's new mount
// namespace and pivots into it. Order (as runc): root propagation, bind
// the rootfs onto itself, spec mounts in order, devices, masked paths,
// read-only paths, pivot_root, read-only root.
func setupRootfs(spec *specs.Spec) error {
	l := spec.Linux
	if l == nil {
		l = &specs.Linux{}
	}
	prop, err := rootPropagation(l.RootfsPropagation)
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", prop, ""); err != nil {
		return fmt.Errorf("set propagation of / to %#x: %w", prop, err)
	}
	root := spec.Root.Path
	if prop&unix.MS_SHARED != 0 {
		// pivot_root refuses a new root whose parent mount is shared.
		if err := parentMountPrivate(root); err != nil {
			return err
		}
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind rootfs %s onto itself: %w", root, err)
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open rootfs %s: %w", root, err)
	}
	defer unix.Close(rfd)

	devBound := false
	for _, m := range spec.Mounts {
		if err := mountInRoot(rfd, m, newNamespace(l, specs.CgroupNamespace)); err != nil {
			return fmt.Errorf("mount %s (%s) on %s: %w", m.Source, m.Type, m.Destination, err)
		}
		if path.Clean(m.Destination) == "/dev" && parseMountOptions(m.Type, m.Options).bind() {
			devBound = true
		}
	}
	if !devBound {
		if err := createDevices(rfd, l.Devices); err != nil {
			return err
		}
	}
	if cwd := spec.Process.Cwd; cwd != "" {
		fd, err := mkdirAllIn(rfd, cwd)
		if err != nil {
			return fmt.Errorf("create cwd %s: %w", cwd, err)
		}
		unix.Close(fd)
	}
	for _, p := range l.MaskedPaths {
		if err := maskPath(rfd, p); err != nil {
			return fmt.Errorf("mask %s: %w", p, err)
		}
	}
	for _, p := range l.ReadonlyPaths {
		if err := readonlyPath(rfd, p); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	if err := pivotRoot(rfd); err != nil {
		return err
	}
	if prop&unix.MS_SHARED != 0 {
		if err := unix.Mount("", "/", "", prop, ""); err != nil {
			return fmt.Errorf("set propagation of new / to %#x: %w", prop, err)
		}
	}
	if spec.Root.Readonly {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /: %w", err)
		}
		err = remountReadOnly(fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("remount / read-only: %w", err)
		}
	}
	return nil
}

// mountInRoot performs one spec mount, its destination resolved inside
// the rootfs.
func mountInRoot(rfd int, m specs.Mount, newCgroupNS bool) error {
	if !path.IsAbs(m.Destination) {
		return fmt.Errorf("%w: mount destination %q is not absolute", ErrInvalidSpec, m.Destination)
	}
	o := parseMountOptions(m.Type, m.Options)
	if m.Type == "cgroup" || m.Type == "cgroup2" {
		return mountCgroup(rfd, m, o, newCgroupNS)
	}
	dir := true
	if o.bind() {
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("bind source: %w", err)
		}
		dir = fi.IsDir()
	}
	fd, err := mountPoint(rfd, m.Destination, dir)
	if err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	if o.bind() {
		err = unix.Mount(m.Source, procFD(fd), "", o.flags&(unix.MS_BIND|unix.MS_REC), "")
	} else {
		err = unix.Mount(m.Source, procFD(fd), m.Type, o.flags, o.data)
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if (!o.bind() || o.remountFlags() == 0) && len(o.prop) == 0 && !o.recursiveRO {
		return nil
	}
	// Reopen: the old descriptor names the covered directory, not the
	// new mount.
	if fd, err = openIn(rfd, m.Destination, 0); err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer unix.Close(fd)
	if o.bind() && o.remountFlags() != 0 {
		if err := remountBind(fd, o.remountFlags()); err != nil {
			return fmt.Errorf("remount with %#x: %w", o.remountFlags(), err)
		}
	}
	if o.recursiveRO {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			return fmt.Errorf("make read-only recursively (rro, needs Linux 5.12): %w", err)
		}
	}
	for _, p := range o.prop {
		if err := unix.Mount("", procFD(fd), "", p, ""); err != nil {
			return fmt.Errorf("set propagation %#x: %w", p, err)
		}
	}
	return nil
}

// maskPath hides p: /dev/null over files, an empty read-only tmpfs over
// directories. Missing paths are fine.
func maskPath(rfd int, p string) error {
	fd, err := openIn(rfd, p, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	dir, err := isDirFD(fd)
	if err != nil {
		return err
	}
	if dir {
		return unix.Mount("tmpfs", procFD(fd), "tmpfs", unix.MS_RDONLY, "")
	}
	return unix.Mount(os.DevNull, procFD(fd), "", unix.MS_BIND, "")
}

// readonlyPath bind-mounts p onto itself read-only. Missing paths are
// fine.
func readonlyPath(rfd int, p string) error {
	fd, err := openIn(rfd, p, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	err = unix.Mount(procFD(fd), procFD(fd), "", unix.MS_BIND|unix.MS_REC, "")
	unix.Close(fd)
	if err != nil {
		return err
	}
	if fd, err = openIn(rfd, p, 0); err != nil {
		return err
	}
	defer unix.Close(fd)
	return remountReadOnly(fd)
}

// pivotRoot makes the rootfs the root: pivot_root(".", ".") stacks the old
// root on top of the new one, which is then detached (after making it a
// slave so the unmount cannot propagate to the host).
func pivotRoot(rfd int) error {
	if err := unix.Fchdir(rfd); err != nil {
		return fmt.Errorf("chdir to rootfs: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Mount("", ".", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make old root a slave: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	return nil
}

// parentMountPrivate makes the mount containing dir private.
func parentMountPrivate(dir string) error {
	mounts, err := mountinfo.GetMounts(mountinfo.ParentsFilter(dir))
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	best := "/"
	for _, m := range mounts {
		if len(m.Mountpoint) > len(best) && (dir == m.Mountpoint || strings.HasPrefix(dir, strings.TrimSuffix(m.Mountpoint, "/")+"/")) {
			best = m.Mountpoint
		}
	}
	if err := unix.Mount("", best, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", best, err)
	}
	return nil
}
