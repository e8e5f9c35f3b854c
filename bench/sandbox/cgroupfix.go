package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

const (
	cgroupRoot     = "/sys/fs/cgroup"
	unifiedCtlFile = "/sys/fs/cgroup/unified/cgroup.controllers"
	hugetlbDir     = "/sys/fs/cgroup/hugetlb"
)

// wantsCrun reports whether crun is among the OCI runtimes to compare.
func wantsCrun(oci []string) bool {
	return slices.ContainsFunc(oci, func(s string) bool { return filepath.Base(s) == "crun" })
}

// prepareCrun makes crun able to run on this host the way mode says, and
// records what it did in n.cgroupNote. Failing to is not an error: crun's
// runs then fail and the report says why.
func (n *node) prepareCrun(mode string) error {
	if _, err := os.Stat(unifiedCtlFile); err != nil {
		n.cgroupNote = "not a hybrid cgroup host: crun runs as is"
		return nil
	}
	switch mode {
	case CrunHugetlb, "":
		fix, note, err := freeCgroup2ForCrun(n.log)
		n.cgroupNote = note
		if err != nil {
			n.cgroupNote = fmt.Sprintf("%s (%v)", note, err)
		}
		if fix != nil {
			n.onClose("undo the cgroup hugetlb mount", func(context.Context) error { return fix.undo() })
		}
	case CrunHide:
		t, err := startHiddenCgroup2()
		if err != nil {
			n.cgroupNote = fmt.Sprintf("could not hide the cgroup2 hierarchy from crun: %v", err)
			return nil
		}
		n.crunNS = t
		n.onClose("stop the crun mount namespace thread", func(context.Context) error { t.stop(); return nil })
		n.cgroupNote = "crun ran from a private mount namespace with an empty tmpfs over /sys/fs/cgroup/unified (crun 1.8 refuses hybrid hosts whose cgroup2 has controllers); the host was not changed"
	case CrunAsIs:
		n.cgroupNote = "hybrid cgroup host left as is for crun"
	default:
		return fmt.Errorf("unknown crun cgroup mode %q (want %s, %s or %s)", mode, CrunHugetlb, CrunHide, CrunAsIs)
	}
	return nil
}

// hugetlbMount undoes what freeCgroup2ForCrun did.
type hugetlbMount struct {
	madeDir, remountedRW bool
	roFlags              uintptr
}

// freeCgroup2ForCrun makes a hybrid cgroup host acceptable to crun 1.8,
// which refuses to run when the cgroup2 hierarchy (/sys/fs/cgroup/unified)
// has controllers ("cgroups in hybrid mode not supported, drop all
// controllers from cgroupv2"). When the only such controller is hugetlb
// — as on this project's machines, whose v1 hierarchies leave it out — it
// mounts a v1 hugetlb hierarchy, which binds the controller there and off
// cgroup2 (making /sys/fs/cgroup writable first if it is a read-only
// tmpfs). The returned mount is nil when nothing was changed; note says
// what was found and done, for the report.
func freeCgroup2ForCrun(log *slog.Logger) (*hugetlbMount, string, error) {
	b, err := os.ReadFile(unifiedCtlFile)
	if err != nil {
		return nil, "no hybrid cgroup2 hierarchy: nothing to do for crun", nil
	}
	ctl := strings.Fields(string(b))
	switch {
	case len(ctl) == 0:
		return nil, "cgroup2 hierarchy has no controllers: crun runs as is", nil
	case !slices.Equal(ctl, []string{"hugetlb"}):
		return nil, fmt.Sprintf("cgroup2 hierarchy has controllers %v, which crun 1.8 refuses on a hybrid host; only a lone hugetlb is handled", ctl), nil
	}
	if mounted, _ := mountinfo.Mounted(hugetlbDir); mounted {
		return nil, "hugetlb is on cgroup2 although " + hugetlbDir + " is a mount point: left alone", nil
	}
	h := &hugetlbMount{}
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return nil, "statfs " + cgroupRoot, err
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		h.roFlags = msFlags(st.Flags)
		if err := remount(h.roFlags &^ unix.MS_RDONLY); err != nil {
			return nil, "could not make the read-only " + cgroupRoot + " writable to mount hugetlb", err
		}
		h.remountedRW = true
	}
	if err := os.Mkdir(hugetlbDir, 0o755); err == nil {
		h.madeDir = true
	} else if !errors.Is(err, os.ErrExist) {
		return nil, "could not create " + hugetlbDir, errors.Join(err, h.undo())
	}
	if err := unix.Mount("cgroup", hugetlbDir, "cgroup", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hugetlb"); err != nil {
		return nil, "could not mount a v1 hugetlb hierarchy", errors.Join(err, h.undo())
	}
	log.Info("mounted a cgroup v1 hugetlb hierarchy so crun accepts this hybrid host", "dir", hugetlbDir)
	if b, err := os.ReadFile(unifiedCtlFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return h, "mounted a v1 hugetlb hierarchy, yet cgroup2 still lists " + strings.TrimSpace(string(b)), nil
	}
	note := "mounted a cgroup v1 hugetlb hierarchy at " + hugetlbDir + " for the run (crun 1.8 refuses hybrid hosts whose cgroup2 has controllers; this one had hugetlb)"
	if h.remountedRW {
		note += ", " + cgroupRoot + " made writable meanwhile"
	}
	return h, note, nil
}

// undo unmounts the hierarchy, removes the directory and restores a
// read-only /sys/fs/cgroup. The kernel destroys an unmounted v1 hierarchy
// (and rebinds hugetlb to cgroup2) only if it has no child cgroup at the
// moment of the unmount, dying ones included: a hierarchy unmounted too
// early lingers, unmounted, holding the controller. So undo waits for the
// children to be freed (/proc/cgroups), and if hugetlb does not come back
// to cgroup2 it mounts the hierarchy again and retries.
func (h *hugetlbMount) undo() error {
	var errs []error
	deadline := time.Now().Add(30 * time.Second)
	for {
		if mounted, _ := mountinfo.Mounted(hugetlbDir); !mounted {
			break
		}
		for time.Now().Before(deadline) && hugetlbCgroups() > 1 {
			time.Sleep(50 * time.Millisecond)
		}
		if err := unix.Unmount(hugetlbDir, 0); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", hugetlbDir, err))
			break
		}
		if waitFor(time.Second, hugetlbOnCgroup2) {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("hugetlb did not return to cgroup2 after unmounting %s (%d cgroups left in its hierarchy): mount it again and unmount it once it has none", hugetlbDir, hugetlbCgroups()))
			break
		}
		if err := unix.Mount("cgroup", hugetlbDir, "cgroup", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hugetlb"); err != nil {
			errs = append(errs, fmt.Errorf("mount %s again to retire it: %w", hugetlbDir, err))
			break
		}
	}
	if h.madeDir && len(errs) == 0 {
		if err := os.Remove(hugetlbDir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if h.remountedRW {
		if err := remount(h.roFlags); err != nil {
			errs = append(errs, fmt.Errorf("make %s read-only again: %w", cgroupRoot, err))
		}
	}
	return errors.Join(errs...)
}

// hugetlbCgroups is the number of cgroups, dying ones included, in the
// hierarchy holding hugetlb (/proc/cgroups), or -1.
func hugetlbCgroups() int {
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "hugetlb" {
			if n, err := strconv.Atoi(f[2]); err == nil {
				return n
			}
		}
	}
	return -1
}

func hugetlbOnCgroup2() bool {
	b, err := os.ReadFile(unifiedCtlFile)
	return err == nil && slices.Contains(strings.Fields(string(b)), "hugetlb")
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// remount changes /sys/fs/cgroup's flags: the superblock's first, the
// mount point's (a read-only bind) when that fails.
func remount(flags uintptr) error {
	err := unix.Mount("", cgroupRoot, "", unix.MS_REMOUNT|flags, "")
	if err == nil {
		return nil
	}
	if err2 := unix.Mount("", cgroupRoot, "", unix.MS_REMOUNT|unix.MS_BIND|flags, ""); err2 != nil {
		return errors.Join(err, err2)
	}
	return nil
}

// msFlags turns statfs flags into the mount(2) flags that keep them.
func msFlags(st int64) uintptr {
	var f uintptr
	for _, m := range []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if st&m.st != 0 {
			f |= m.ms
		}
	}
	return f
}
