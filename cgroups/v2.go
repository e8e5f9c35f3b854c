package cgroups

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v2 drives the unified hierarchy through containerd's cgroup2. It creates
// directories level by level itself, enabling the controllers a level needs
// in its parent's cgroup.subtree_control, as the kubelet does.
type v2 struct {
	mountpoint string
	// mkdir creates one cgroup directory; tests swap in a fake kernel that
	// also creates the control files.
	mkdir func(dir string) error
	// livenessPoll is how often an OOM watch checks that its cgroup still
	// exists (removal does not always reach inotify).
	livenessPoll time.Duration
}

var _ driver = (*v2)(nil)

func (d *v2) version() int { return 2 }

func (d *v2) dir(path string) string { return filepath.Join(d.mountpoint, path) }

func (d *v2) load(path string) (*cgroup2.Manager, error) {
	if _, err := os.Stat(d.dir(path)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
		return nil, err
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(d.mountpoint))
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return m, nil
}

func (d *v2) ensure(path string, r *specs.LinuxResources) error {
	res := toV2(r)
	controllers := res.EnabledControllers()
	cur := "/"
	for _, part := range strings.Split(strings.Trim(path, "/"), "/") {
		if part == "" {
			continue
		}
		if len(controllers) > 0 {
			if err := enableControllers(d.dir(cur), controllers); err != nil {
				return fmt.Errorf("create %s: %w", path, err)
			}
		}
		cur = filepath.Join(cur, part)
		if err := d.mkdir(d.dir(cur)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create %s: %w", cur, err)
		}
	}
	m, err := d.load(path)
	if err != nil {
		return err
	}
	if err := m.Update(res); err != nil {
		return fmt.Errorf("configure %s: %w", path, err)
	}
	if r == nil {
		return nil
	}
	keys := make([]string, 0, len(r.Unified))
	for k := range r.Unified {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if validName(k) != nil || !strings.Contains(k, ".") {
			return fmt.Errorf("unified key %q: %w", k, ErrInvalidPath)
		}
		if err := os.WriteFile(filepath.Join(d.dir(path), k), []byte(r.Unified[k]), 0o644); err != nil {
			return fmt.Errorf("configure %s: %s: %w", path, k, err)
		}
	}
	return nil
}

// enableControllers makes sure dir's children can use want.
func enableControllers(dir string, want []string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(data)) {
		have[strings.TrimPrefix(c, "+")] = true
	}
	missing := false
	add := make([]string, 0, len(want))
	for _, c := range want {
		missing = missing || !have[c]
		add = append(add, "+"+c) // enabling one already on is a no-op
	}
	if !missing {
		return nil
	}
	if err := os.WriteFile(file, []byte(strings.Join(add, " ")), 0); err != nil {
		avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		return fmt.Errorf("enable %s in %s (available: %q): %w (%w)", strings.Join(add, " "), dir, strings.TrimSpace(string(avail)), err, ErrUnsupported)
	}
	return nil
}

// toV2 converts OCI resources with the kubelet's conventions: its linear
// shares-to-weight mapping, and "max" for no CPU quota or memory limit.
func toV2(r *specs.LinuxResources) *cgroup2.Resources {
	if r == nil {
		return &cgroup2.Resources{}
	}
	res := cgroup2.ToResources(r)
	if c := r.CPU; c != nil && res.CPU != nil {
		res.CPU.Weight = nil
		if c.Shares != nil {
			w := SharesToWeight(*c.Shares)
			res.CPU.Weight = &w
		}
		res.CPU.Max = ""
		if c.Quota != nil && *c.Quota > 0 {
			res.CPU.Max = cgroup2.NewCPUMax(c.Quota, c.Period)
		} else if c.Period != nil {
			res.CPU.Max = cgroup2.NewCPUMax(nil, c.Period)
		}
	}
	if res.Memory != nil && res.Memory.Max != nil && *res.Memory.Max <= 0 {
		res.Memory.Max = nil
	}
	return res
}

func (d *v2) stats(path string) (*Stats, error) {
	m, err := d.load(path)
	if err != nil {
		return nil, err
	}
	mt, err := m.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	s := &Stats{}
	if mt.CPU != nil {
		s.CPUUsageNanos = mt.CPU.UsageUsec * 1000
	}
	if mt.Memory != nil {
		s.MemoryUsageBytes = mt.Memory.Usage
		s.MemoryLimitBytes = mt.Memory.UsageLimit
		if mt.Memory.InactiveFile < s.MemoryUsageBytes {
			s.MemoryWorkingSetBytes = s.MemoryUsageBytes - mt.Memory.InactiveFile
		}
	}
	if mt.MemoryEvents != nil {
		s.OOMKills = mt.MemoryEvents.OomKill
	}
	if mt.Pids != nil {
		s.PIDs = mt.Pids.Current
		if mt.Pids.Limit != math.MaxUint64 {
			s.PIDsLimit = mt.Pids.Limit
		}
	}
	return s, nil
}

func (d *v2) procs(path string) ([]int, error) {
	m, err := d.load(path)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pids, err := m.Procs(true)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list processes of %s: %w", path, err)
	}
	out := make([]int, 0, len(pids))
	for _, p := range pids {
		out = append(out, int(p))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (d *v2) addProc(path string, pid int) error {
	m, err := d.load(path)
	if err != nil {
		return err
	}
	if err := m.AddProc(uint64(pid)); err != nil {
		return fmt.Errorf("add %d to %s: %w", pid, path, err)
	}
	return nil
}

// kill writes cgroup.kill (Linux 5.14+), which kills the whole subtree;
// the library falls back to freeze, signal, thaw on older kernels.
func (d *v2) kill(path string) error {
	m, err := d.load(path)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := m.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", path, err)
	}
	return nil
}

func (d *v2) dirs(path string) []string { return []string{d.dir(path)} }

func (d *v2) watchOOM(ctx context.Context, path string, now func() time.Time) (<-chan OOMEvent, error) {
	return watchOOMv2(ctx, path, d.dir(path), now, d.livenessPoll)
}

// swapAccounting looks for memory.swap.max, which exists on every non-root
// cgroup when the kernel accounts swap.
func (d *v2) swapAccounting(path string) bool {
	_, err := os.Stat(filepath.Join(d.dir(path), "memory.swap.max"))
	return err == nil
}
