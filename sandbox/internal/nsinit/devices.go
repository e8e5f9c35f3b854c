package nsinit

import (
	"errors"
	"fmt"
	"path"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// defaultDevices are the nodes every container gets (runtime-spec "Default
// Devices"), in addition to spec.Linux.Devices.
var defaultDevices = []specs.LinuxDevice{
	{Path: "/dev/null", Type: "c", Major: 1, Minor: 3},
	{Path: "/dev/zero", Type: "c", Major: 1, Minor: 5},
	{Path: "/dev/full", Type: "c", Major: 1, Minor: 7},
	{Path: "/dev/random", Type: "c", Major: 1, Minor: 8},
	{Path: "/dev/urandom", Type: "c", Major: 1, Minor: 9},
	{Path: "/dev/tty", Type: "c", Major: 5, Minor: 0},
}

// devLinks are the /dev symlinks every container gets.
var devLinks = [][2]string{
	{"/proc/self/fd", "fd"},
	{"/proc/self/fd/0", "stdin"},
	{"/proc/self/fd/1", "stdout"},
	{"/proc/self/fd/2", "stderr"},
	{"pts/ptmx", "ptmx"},
}

// createDevices makes the default and the spec's device nodes and the
// /dev symlinks. Nodes are made with mknod, or, where the kernel or the
// device cgroup refuses that, by bind-mounting the host's node.
func createDevices(rfd int, specDevs []specs.LinuxDevice) error {
	devs := append([]specs.LinuxDevice(nil), specDevs...)
	for _, d := range defaultDevices {
		found := false
		for _, s := range specDevs {
			found = found || path.Clean(s.Path) == d.Path
		}
		if !found {
			devs = append(devs, d)
		}
	}
	for _, d := range devs {
		if err := createDevice(rfd, d); err != nil {
			return fmt.Errorf("create device %s: %w", d.Path, err)
		}
	}
	devfd, err := mkdirAllIn(rfd, "/dev")
	if err != nil {
		return fmt.Errorf("open /dev: %w", err)
	}
	defer unix.Close(devfd)
	for _, l := range devLinks {
		if l[1] == "ptmx" {
			if err := unix.Unlinkat(devfd, l[1], 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("remove /dev/ptmx: %w", err)
			}
		}
		if err := unix.Symlinkat(l[0], devfd, l[1]); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("symlink /dev/%s: %w", l[1], err)
		}
	}
	return nil
}

func createDevice(rfd int, d specs.LinuxDevice) error {
	var typ uint32
	switch d.Type {
	case "c", "u":
		typ = unix.S_IFCHR
	case "b":
		typ = unix.S_IFBLK
	case "p":
		typ = unix.S_IFIFO
	default:
		return fmt.Errorf("%w: device type %q", ErrInvalidSpec, d.Type)
	}
	if !path.IsAbs(d.Path) {
		return fmt.Errorf("%w: device path %q is not absolute", ErrInvalidSpec, d.Path)
	}
	mode := uint32(0o666)
	if d.FileMode != nil {
		mode = uint32(d.FileMode.Perm())
	}
	parent, err := mkdirAllIn(rfd, path.Dir(path.Clean(d.Path)))
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	base := path.Base(d.Path)
	if err := unix.Unlinkat(parent, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	err = unix.Mknodat(parent, base, typ|mode, int(unix.Mkdev(uint32(d.Major), uint32(d.Minor))))
	if errors.Is(err, unix.EPERM) && typ != unix.S_IFIFO {
		return bindDevice(parent, base, d.Path)
	}
	if err != nil {
		return err
	}
	if d.UID != nil || d.GID != nil {
		uid, gid := -1, -1
		if d.UID != nil {
			uid = int(*d.UID)
		}
		if d.GID != nil {
			gid = int(*d.GID)
		}
		if err := unix.Fchownat(parent, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	}
	return nil
}

// bindDevice bind-mounts the host's node at hostPath onto an empty file.
func bindDevice(parent int, base, hostPath string) error {
	if err := unix.Mknodat(parent, base, unix.S_IFREG|0o644, 0); err != nil {
		return err
	}
	fd, err := unix.Openat(parent, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Mount(hostPath, procFD(fd), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind host %s: %w", hostPath, err)
	}
	return nil
}
