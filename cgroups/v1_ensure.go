package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ensure creates path in every hierarchy and applies r. It does what
// cgroup1.New does, one hierarchy after the other, except for cpuset:
// containerd's cpuset controller walks from the hierarchy's root down to
// path on every call, reading each ancestor's cpus and mems and stat-ing
// it, which was a quarter of the CPU of creating a pod's and a container's
// cgroups (two per pod start, plus the kubelet's ensure on every sync).
// ensureCpuset touches the ancestors only when the parent is missing.
func (d *v1) ensure(path string, r *specs.LinuxResources) error {
	if r == nil {
		r = &specs.LinuxResources{}
	}
	if len(r.Unified) > 0 {
		return fmt.Errorf("unified keys for %s: %w", path, ErrUnsupported)
	}
	subs, err := d.hierarchy()
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	type creator interface {
		Create(path string, r *specs.LinuxResources) error
	}
	type pather interface{ Path(string) string }
	for _, s := range subs {
		p, isPather := s.(pather)
		switch c, isCreator := s.(creator); {
		case s.Name() == cgroup1.Cpuset && isPather:
			err = ensureCpuset(p.Path("/"), p.Path(path), r.CPU)
		case isCreator:
			err = c.Create(path, r)
		case isPather:
			err = os.MkdirAll(p.Path(path), 0o755)
		}
		if err != nil {
			return fmt.Errorf("create %s (%s): %w", path, s.Name(), err)
		}
	}
	return nil
}

// ensureCpuset creates dir under the cpuset hierarchy's root with its cpus
// and mems set: the values of cpu when given, else the parent's (a v1
// cpuset cannot take a process while either is empty).
func ensureCpuset(root, dir string, cpu *specs.LinuxCPU) error {
	if err := ensureCpusetDir(root, dir); err != nil {
		return err
	}
	if cpu == nil {
		return nil
	}
	for _, kv := range [][2]string{{"cpuset.cpus", cpu.Cpus}, {"cpuset.mems", cpu.Mems}} {
		name, v := kv[0], kv[1]
		if v == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ensureCpusetDir creates dir and any missing ancestor below root, with
// cpus and mems populated. A directory that holds both is left alone; one
// with an empty value (fresh, or an earlier ensure interrupted between
// mkdir and copy) gets its parent's. Once it had to copy, it sets
// cgroup.clone_children on the directory, so the kernel fills the values
// of every cgroup created below it (the pods and their containers) at
// mkdir: a write to cpuset.cpus revalidates the whole hierarchy and cost
// more than creating the directory.
func ensureCpusetDir(root, dir string) error {
	if dir == root || !within(root, dir) {
		return nil
	}
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		if err := ensureCpusetDir(root, filepath.Dir(dir)); err != nil {
			return err
		}
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	copied := false
	for _, name := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if len(bytes.TrimSpace(cur)) > 0 {
			continue
		}
		v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), v, 0o644); err != nil {
			return err
		}
		copied = true
	}
	if copied {
		// Best effort: without it the children are copied as above.
		_ = writeIfExists(filepath.Join(dir, "cgroup.clone_children"), "1")
	}
	return nil
}

// writeIfExists writes v to an existing file (cgroupfs control files
// cannot be created; a fake cgroupfs in tests does not have them all).
func writeIfExists(path, v string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
