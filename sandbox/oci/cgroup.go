package oci

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultCgroupRoot is where the node's cgroup filesystems are mounted.
const DefaultCgroupRoot = "/sys/fs/cgroup"

// crunHybridMessage is what crun says when it refuses a hybrid node.
const crunHybridMessage = "cgroups in hybrid mode not supported"

// CheckHybridCgroups reports, with ErrHybridCgroups and the commands that
// cure it, whether crun would refuse to create containers on the node
// whose cgroup filesystems are mounted at root: a hybrid layout (root not
// itself cgroup2, root/unified cgroup2) whose cgroup2 hierarchy has a
// controller, i.e. a non-empty root/unified/cgroup.controllers. It is nil
// on pure v1 and pure v2 nodes, and on hybrid nodes without controllers in
// cgroup2.
func CheckHybridCgroups(root string) error {
	return checkHybrid(root, isCgroup2)
}

func checkHybrid(root string, cgroup2 func(string) (bool, error)) error {
	unified := filepath.Join(root, "unified")
	for _, dir := range []string{root, unified} {
		v2, err := cgroup2(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil // no cgroups (crun says so itself), or pure v1
		case err != nil:
			return fmt.Errorf("check hybrid cgroups: %w", err)
		case dir == root && v2:
			return nil // pure v2
		case dir == unified && !v2:
			return nil // pure v1
		}
	}
	b, err := os.ReadFile(filepath.Join(unified, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("check hybrid cgroups: %w", err)
	}
	ctrls := strings.Fields(string(b))
	if len(ctrls) == 0 {
		return nil
	}
	return fmt.Errorf("%s has controllers %v: %w (%s)", unified, ctrls, ErrHybridCgroups, hybridHint(root, ctrls))
}

// hybridHint tells an operator how to move the controllers out of
// cgroup2: mount a v1 hierarchy for each.
func hybridHint(root string, ctrls []string) string {
	if len(ctrls) == 0 {
		ctrls = []string{"<controller>"}
		if b, err := os.ReadFile(filepath.Join(root, "unified", "cgroup.controllers")); err == nil && len(strings.Fields(string(b))) > 0 {
			ctrls = strings.Fields(string(b))
		}
	}
	var cmds []string
	for _, c := range ctrls {
		dir := filepath.Join(root, c)
		cmds = append(cmds, fmt.Sprintf("mkdir %s && mount -t cgroup -o %s cgroup %s", dir, c, dir))
	}
	return fmt.Sprintf("crun needs every controller on a cgroup v1 hierarchy on a hybrid node; mount the missing ones "+
		"(remount %s read-write first if it is read-only): %s", root, strings.Join(cmds, "; "))
}

// isCgroup2 reports whether dir is the root of a cgroup2 filesystem.
func isCgroup2(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, &os.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return st.Type == unix.CGROUP2_SUPER_MAGIC, nil
}
