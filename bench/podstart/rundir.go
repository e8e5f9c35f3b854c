package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// prepareRunDir creates the node's runtime root. With tmpfs, and when the
// directory would land on a disk file system, it mounts a tmpfs there and
// the returned cleanup unmounts it.
//
// Why: the runtime root lives under /run, a tmpfs on a normal host (as
// /run/containerd does). This benchmark's VM has /run on its root ext4,
// which has no journal and where creating an inode costs 0.2-0.4 ms of CPU
// (the allocator skips recently deleted inodes, and the VM's other users
// delete many); a pod start creates about fifteen there (records, pins,
// bundle directories), which would put ~5 ms of this host's quirk in each
// pod's CPU figure. -run-tmpfs=false measures it as is.
func prepareRunDir(dir string, tmpfs bool) (mounted bool, cleanup func(), err error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return false, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	if !tmpfs {
		return false, cleanup, nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Type == unix.TMPFS_MAGIC {
		return false, cleanup, nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0711"); err != nil {
		return false, nil, fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
	}
	return true, func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			fmt.Fprintln(os.Stderr, "podstart: unmount", dir+":", err)
		}
		os.RemoveAll(dir)
	}, nil
}

// describeRunDir names the runtime root and its file system for the report.
func describeRunDir(n *node) string {
	var st unix.Statfs_t
	fs := "unknown file system"
	if err := unix.Statfs(n.runDir, &st); err == nil {
		fs = "disk file system"
		if st.Type == unix.TMPFS_MAGIC {
			fs = "tmpfs"
		}
	}
	if n.runTmpfs {
		fs += ", mounted by the benchmark (-run-tmpfs)"
	}
	return n.runDir + " on " + fs
}

// cgroup2Options reports the cgroup2 mount's options (favordynmods is the
// one that matters: see hack/host-setup.sh).
func cgroup2Options() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "unknown"
	}
	lines := strings.Split(string(b), "\n")
	for _, p := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) < 10 || f[4] != p {
				continue
			}
			for i, x := range f {
				if x == "-" && i+3 < len(f) && f[i+1] == "cgroup2" {
					return p + " " + f[i+3]
				}
			}
		}
	}
	return "none"
}
