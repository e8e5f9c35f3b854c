package nsinit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// hostCgroupRoot is where the host mounts its cgroup hierarchies.
const hostCgroupRoot = "/sys/fs/cgroup"

// cgroupLine is one line of /proc/self/cgroup.
type cgroupLine struct {
	controllers string // "memory", "cpu,cpuacct", "name=systemd", "" (v2)
	path        string
}

// mountCgroup shows the container its own cgroups at m.Destination.
//
// cgroup v2: a fresh cgroup2 mount in a new cgroup namespace (its root is
// the container's cgroup), otherwise a bind of the container's cgroup
// directory. cgroup v1 and hybrid: a tmpfs with one directory per host
// hierarchy (named as on the host), each a fresh mount of that hierarchy
// in a new cgroup namespace or a bind of the container's cgroup directory
// in it, plus symlinks for co-mounted controllers ("cpu" -> "cpu,cpuacct").
// The init was placed in its cgroups before this runs, so
// /proc/self/cgroup names them.
func mountCgroup(rfd int, m specs.Mount, o mountOpts, newNS bool) error {
	lines, err := readProcCgroup()
	if err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(hostCgroupRoot, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", hostCgroupRoot, err)
	}
	fd, err := mountPoint(rfd, m.Destination, true)
	if err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	defer unix.Close(fd)
	flags := o.flags &^ (unix.MS_BIND | unix.MS_REC | unix.MS_REMOUNT)
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		reopen := func() (int, error) { return openIn(rfd, m.Destination, unix.O_DIRECTORY) }
		return mountHierarchy(fd, reopen, flags, cgroupLine{path: lines[""]}, hostCgroupRoot, "/", newNS)
	}

	if err := unix.Mount("tmpfs", procFD(fd), "tmpfs", flags&^unix.MS_RDONLY, "mode=755"); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	tfd, err := openIn(rfd, m.Destination, unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer unix.Close(tfd)
	hiers, err := mountinfo.GetMounts(func(i *mountinfo.Info) (bool, bool) {
		return path.Dir(i.Mountpoint) != hostCgroupRoot || (i.FSType != "cgroup" && i.FSType != "cgroup2"), false
	})
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	for _, h := range hiers {
		name := path.Base(h.Mountpoint)
		line, ok := matchHierarchy(h, lines)
		if !ok {
			continue
		}
		if err := unix.Mkdirat(tfd, name, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", name, err)
		}
		sub, err := unix.Openat(tfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", name, err)
		}
		reopen := func() (int, error) {
			return unix.Openat(tfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		err = mountHierarchy(sub, reopen, flags, line, h.Mountpoint, h.Root, newNS)
		unix.Close(sub)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if strings.Contains(name, ",") {
			for _, c := range strings.Split(name, ",") {
				if err := unix.Symlinkat(name, tfd, c); err != nil && err != unix.EEXIST {
					return fmt.Errorf("symlink %s: %w", c, err)
				}
			}
		}
	}
	if flags&unix.MS_RDONLY != 0 {
		if err := remountReadOnly(tfd); err != nil {
			return fmt.Errorf("remount tmpfs read-only: %w", err)
		}
	}
	return nil
}

// mountHierarchy mounts one hierarchy on fd: fresh in a new cgroup
// namespace, else a bind of the init's cgroup directory under the host
// mount (hostMount, whose root in the hierarchy is hostRoot). reopen
// returns a descriptor of the mount point after mounting (the new mount).
func mountHierarchy(fd int, reopen func() (int, error), flags uintptr, line cgroupLine, hostMount, hostRoot string, newNS bool) error {
	if newNS {
		typ, data := "cgroup2", ""
		if line.controllers != "" {
			typ, data = "cgroup", line.controllers
		}
		return unix.Mount("cgroup", procFD(fd), typ, flags, data)
	}
	rel, ok := strings.CutPrefix(line.path, strings.TrimSuffix(hostRoot, "/"))
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return fmt.Errorf("cgroup %s is outside the host mount %s (root %s)", line.path, hostMount, hostRoot)
	}
	if err := unix.Mount(hostMount+rel, procFD(fd), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", hostMount+rel, err)
	}
	if flags == 0 {
		return nil
	}
	nfd, err := reopen()
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	return remountBind(nfd, flags)
}

// matchHierarchy finds the /proc/self/cgroup line of a host hierarchy
// mount: cgroup2 matches the "0::" line, a v1 mount the line whose
// controllers are all among its super options.
func matchHierarchy(h *mountinfo.Info, lines map[string]string) (cgroupLine, bool) {
	if h.FSType == "cgroup2" {
		p, ok := lines[""]
		return cgroupLine{path: p}, ok
	}
	opts := make(map[string]bool)
	for _, o := range strings.Split(h.VFSOptions, ",") {
		opts[o] = true
	}
	for c, p := range lines {
		if c == "" {
			continue
		}
		all := true
		for _, one := range strings.Split(c, ",") {
			all = all && opts[one]
		}
		if all {
			return cgroupLine{controllers: c, path: p}, true
		}
	}
	return cgroupLine{}, false
}

// readProcCgroup maps controllers ("" for v2) to the init's cgroup path.
func readProcCgroup() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	lines := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) == 3 {
			lines[parts[1]] = parts[2]
		}
	}
	return lines, nil
}
