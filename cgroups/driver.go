package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// driver is one cgroup version's implementation. Paths are cgroup paths
// ("/kubepods/pod<uid>"), relative to every hierarchy's root.
type driver interface {
	version() int
	// ensure creates path and its parents and applies r (nil: create only).
	ensure(path string, r *specs.LinuxResources) error
	stats(path string) (*Stats, error)
	// procs lists the processes in path and its descendants.
	procs(path string) ([]int, error)
	addProc(path string, pid int) error
	// kill sends SIGKILL to every process in path and its descendants.
	kill(path string) error
	// dirs lists the directories holding path, one per hierarchy.
	dirs(path string) []string
	watchOOM(ctx context.Context, path string, now func() time.Time) (<-chan OOMEvent, error)
	// swapAccounting tells whether the host accounts swap.
	swapAccounting(path string) bool
}

// cleanPath validates a cgroup path: absolute, clean, no dot elements.
func cleanPath(p string) (string, error) {
	if p == "" || !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q is not an absolute cgroup path: %w", p, ErrInvalidPath)
	}
	c := path.Clean(p)
	if c != p && c+"/" != p {
		return "", fmt.Errorf("%q is not a clean cgroup path: %w", p, ErrInvalidPath)
	}
	return c, nil
}

// validName checks a single path element.
func validName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00\n") {
		return fmt.Errorf("%q is not a valid cgroup name: %w", name, ErrInvalidPath)
	}
	return nil
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+"/") || root == "/"
}

// removeDirs removes each directory tree depth-first with rmdir (cgroupfs
// directories go with rmdir, their control files with them), retrying
// while the kernel still reports them busy. A directory holding only plain
// files (a fake cgroupfs in tests) is removed with its files.
func removeDirs(ctx context.Context, dirs []string, poll time.Duration) error {
	var errs []error
	for _, top := range dirs {
		var tree []string
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				tree = append(tree, p)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slices.Reverse(tree) // children before parents
		for _, d := range tree {
			if err := rmdir(ctx, d, poll); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func rmdir(ctx context.Context, dir string, poll time.Duration) error {
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.ENOTEMPTY) && onlyFiles(dir):
			return os.RemoveAll(dir)
		case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EAGAIN):
			select {
			case <-ctx.Done():
				return fmt.Errorf("remove %s: %w (%w)", dir, err, ctx.Err())
			case <-time.After(poll):
			}
		default:
			return fmt.Errorf("remove %s: %w", dir, err)
		}
	}
}

func onlyFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() {
			return false
		}
	}
	return true
}

// existsAny reports whether any of dirs exists.
func existsAny(dirs []string) bool {
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// mkdir creates one cgroup directory.
func mkdir(dir string) error { return os.Mkdir(dir, 0o755) }
