package oci_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox/oci"
)

// requireCrunCgroups makes this node's cgroups acceptable to crun for the
// duration of the test, and undoes it afterwards.
//
// The quirk: crun refuses to create containers on a hybrid node (cgroup v1
// controllers, cgroup2 at /sys/fs/cgroup/unified) when the cgroup2
// hierarchy has any controller. This machine mounts a v1 hierarchy for
// every controller but hugetlb, which therefore sits in cgroup2. Mounting
// a v1 hugetlb hierarchy moves it out of cgroup2, and crun is content.
//
// The helper does that only when needed (CheckHybridCgroups says so): for
// each controller listed in unified/cgroup.controllers it creates
// /sys/fs/cgroup/<controller> (remounting the /sys/fs/cgroup tmpfs
// read-write first when it is read-only) and mounts the v1 hierarchy
// there. At the end it unmounts, removes the directories and restores the
// read-only tmpfs; the kernel then gives the controller back to cgroup2
// (once the hierarchy has no cgroups left, which the node's cleanup,
// registered later and so run earlier, sees to).
//
// Call it before newNode, so that the node's cgroup tree, which discovers
// the v1 hierarchies once, manages the new one too.
func requireCrunCgroups(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	root := oci.DefaultCgroupRoot
	err := oci.CheckHybridCgroups(root)
	if err == nil {
		return
	}
	require.ErrorIs(t, err, oci.ErrHybridCgroups)
	ctrls := controllersOf(t, filepath.Join(root, "unified"))
	t.Logf("crun quirk: cgroup2 has controllers %v; mounting v1 hierarchies for them", ctrls)

	wasRO := readOnly(t, root)
	if wasRO {
		require.NoError(t, remount(root, false), "remount %s read-write", root)
		t.Cleanup(func() {
			if err := remount(root, true); err != nil {
				t.Errorf("restore read-only %s: %v", root, err)
			}
		})
	}
	for _, c := range ctrls {
		dir := filepath.Join(root, c)
		switch err := os.Mkdir(dir, 0o755); {
		case errors.Is(err, fs.ErrExist): // an empty leftover: mount over it, leave it
		case err != nil:
			t.Fatalf("crun quirk: mkdir %s: %v", dir, err)
		default:
			t.Cleanup(func() {
				if err := os.Remove(dir); err != nil {
					t.Errorf("crun quirk: remove %s: %v", dir, err)
				}
			})
		}
		if err := unix.Mount("cgroup", dir, "cgroup", 0, c); err != nil {
			t.Fatalf("crun quirk: mount -t cgroup -o %s cgroup %s: %v", c, dir, err)
		}
		t.Cleanup(func() { unmountHierarchy(t, dir, c) })
	}
	// The controllers leave cgroup2 as the mounts are made.
	if err := oci.CheckHybridCgroups(root); err != nil {
		t.Fatalf("crun quirk: v1 hierarchies for %v mounted, but crun still cannot run: %v", ctrls, err)
	}
}

func controllersOf(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	require.NoError(t, err)
	return strings.Fields(string(b))
}

func readOnly(t *testing.T, dir string) bool {
	t.Helper()
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	return st.Flags&unix.ST_RDONLY != 0
}

// remount flips the read-only flag of the tmpfs at dir, keeping its other
// flags.
func remount(dir string, ro bool) error {
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(dir))
	if err != nil || len(infos) == 0 {
		return errors.Join(err, errors.New("not a mount point: "+dir))
	}
	flags := uintptr(unix.MS_REMOUNT)
	for _, o := range strings.Split(infos[0].Options, ",") {
		switch o {
		case "nosuid":
			flags |= unix.MS_NOSUID
		case "nodev":
			flags |= unix.MS_NODEV
		case "noexec":
			flags |= unix.MS_NOEXEC
		}
	}
	if ro {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount("", dir, "", flags, infos[0].VFSOptions)
}

// unmountHierarchy unmounts the v1 hierarchy of controller c that the
// helper mounted at dir, so that the kernel gives c back to cgroup2. The
// kernel destroys a hierarchy at unmount only if its root has no child
// cgroups, and a removed cgroup lingers as a child for a moment after its
// rmdir; unmounted too early, the hierarchy stays alive, hidden, with c
// bound to it until someone mounts and unmounts it again. So it waits
// until /proc/cgroups counts only the root cgroup (another test may still
// be removing its own), unmounts, and checks c is back in cgroup2.
//
// Other tests on the machine may mount the same hierarchy meanwhile (the
// kernel shares one v1 hierarchy per controller set): then giving c back
// is theirs to do, and it only unmounts its own mount.
func unmountHierarchy(t *testing.T, dir, c string) {
	t.Helper()
	if n := hierarchyMounts(t, c); n > 1 {
		t.Logf("crun quirk: %s is mounted %d times; unmounting only %s", c, n, dir)
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("crun quirk: unmount %s: %v", dir, err)
		}
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := numCgroups(t, c); n != 1; n = numCgroups(t, c) {
		if time.Now().After(deadline) {
			t.Errorf("crun quirk: the %s hierarchy still has %d cgroups; unmounting anyway, %s stays on a hidden v1 hierarchy until it is mounted and unmounted again", c, n, c)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Errorf("crun quirk: unmount %s: %v", dir, err)
		return
	}
	unified := filepath.Join(oci.DefaultCgroupRoot, "unified")
	for !slices.Contains(controllersOf(t, unified), c) {
		if time.Now().After(deadline) {
			t.Errorf("crun quirk: %s is not back in %s/cgroup.controllers (a mount of the hierarchy in another mount namespace, e.g. a container's, may still hold it)", c, unified)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// numCgroups is the num_cgroups column of /proc/cgroups for controller c:
// the cgroups of its hierarchy, including those being destroyed.
func numCgroups(t *testing.T, c string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/cgroups")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == c {
			n, err := strconv.Atoi(f[2])
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("controller %s not in /proc/cgroups", c)
	return 0
}

// hierarchyMounts counts the mounts of the v1 hierarchy of controller c
// in this mount namespace.
func hierarchyMounts(t *testing.T, c string) int {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup"))
	require.NoError(t, err)
	n := 0
	for _, m := range infos {
		if slices.Contains(strings.Split(m.VFSOptions, ","), c) {
			n++
		}
	}
	return n
}
