package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
)

// v1 drives the legacy hierarchies, one mount per controller (or per
// group of co-mounted controllers), through containerd's cgroup1.
type v1 struct {
	// hierarchy is the cached result of the configured cgroup1.Hierarchy:
	// discovering the mounts reads /proc/self/mountinfo, once is enough.
	hierarchy cgroup1.Hierarchy
	// unified is the cgroup2 mount of a hybrid host ("" otherwise). podkit
	// creates nothing there, but OCI runtimes (runc, crun) mirror each
	// container's cgroup path into it; dirs reports such leftovers so
	// Remove deletes them too.
	unified string
}

// cachedHierarchy memoises h; a failure is retried on the next call.
func cachedHierarchy(h cgroup1.Hierarchy) cgroup1.Hierarchy {
	var (
		mu   sync.Mutex
		subs []cgroup1.Subsystem
	)
	return func() ([]cgroup1.Subsystem, error) {
		mu.Lock()
		defer mu.Unlock()
		if subs != nil {
			return subs, nil
		}
		s, err := h()
		if err != nil {
			return nil, err
		}
		subs = s
		return subs, nil
	}
}

var _ driver = (*v1)(nil)

func (d *v1) version() int { return 1 }

func (d *v1) load(path string) (cgroup1.Cgroup, error) {
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHierarchy(d.hierarchy))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return cg, nil
}

func (d *v1) stats(path string) (*Stats, error) {
	cg, err := d.load(path)
	if err != nil {
		return nil, err
	}
	m, err := cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	s := &Stats{}
	if m.CPU != nil && m.CPU.Usage != nil {
		s.CPUUsageNanos = m.CPU.Usage.Total
	}
	if m.Memory != nil && m.Memory.Usage != nil {
		s.MemoryUsageBytes = m.Memory.Usage.Usage
		s.MemoryLimitBytes = m.Memory.Usage.Limit
		if inactive := m.Memory.TotalInactiveFile; inactive < s.MemoryUsageBytes {
			s.MemoryWorkingSetBytes = s.MemoryUsageBytes - inactive
		}
	}
	if m.MemoryOomControl != nil {
		s.OOMKills = m.MemoryOomControl.OomKill
	}
	if m.Pids != nil {
		s.PIDs, s.PIDsLimit = m.Pids.Current, m.Pids.Limit
	}
	return s, nil
}

// procs is the union over all hierarchies: a process may have been moved
// in only some of them.
func (d *v1) procs(path string) ([]int, error) {
	cg, err := d.load(path)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	var out []int
	for _, s := range cg.Subsystems() {
		ps, err := cg.Processes(s.Name(), true)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("list processes of %s (%s): %w", path, s.Name(), err)
		}
		for _, p := range ps {
			if !seen[p.Pid] {
				seen[p.Pid] = true
				out = append(out, p.Pid)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func (d *v1) addProc(path string, pid int) error {
	cg, err := d.load(path)
	if err != nil {
		return err
	}
	if err := cg.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("add %d to %s: %w", pid, path, err)
	}
	return nil
}

// kill freezes the tree (when the freezer is mounted) so nothing forks
// while it is being signalled, sends SIGKILL to every process, and thaws
// it so the signals are delivered.
func (d *v1) kill(path string) error {
	cg, err := d.load(path)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	frozen := false
	for _, s := range cg.Subsystems() {
		if s.Name() == cgroup1.Freezer {
			frozen = cg.Freeze() == nil
		}
	}
	pids, err := d.procs(path)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	if frozen {
		if err := cg.Thaw(); err != nil {
			errs = append(errs, fmt.Errorf("thaw %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

func (d *v1) dirs(path string) []string {
	subs, err := d.hierarchy()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range subs {
		if p, ok := s.(interface{ Path(string) string }); ok {
			dir := p.Path(path)
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		}
	}
	if d.unified != "" {
		if dir := filepath.Join(d.unified, path); dirExists(dir) {
			out = append(out, dir)
		}
	}
	return out
}

// memoryDir is path's directory in the memory hierarchy.
func (d *v1) memoryDir(path string) (string, error) {
	subs, err := d.hierarchy()
	if err != nil {
		return "", err
	}
	for _, s := range subs {
		if p, ok := s.(interface{ Path(string) string }); ok && s.Name() == cgroup1.Memory {
			return p.Path(path), nil
		}
	}
	return "", fmt.Errorf("memory controller is not mounted: %w", ErrUnsupported)
}

func (d *v1) watchOOM(ctx context.Context, path string, now func() time.Time) (<-chan OOMEvent, error) {
	dir, err := d.memoryDir(path)
	if err != nil {
		return nil, err
	}
	return watchOOMv1(ctx, path, dir, now)
}

func (d *v1) swapAccounting(string) bool {
	dir, err := d.memoryDir("/")
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes"))
	return err == nil
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
