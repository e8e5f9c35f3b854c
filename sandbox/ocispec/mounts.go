package ocispec

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
)

// Container paths of the files and directories the sandbox provides.
const (
	etcHostname   = "/etc/hostname"
	etcHosts      = "/etc/hosts"
	etcResolvConf = "/etc/resolv.conf"
	devShm        = "/dev/shm"
)

// defaultMounts returns the file systems every container gets, in
// containerd's order. Privileged containers get /sys and /sys/fs/cgroup
// writable.
func defaultMounts(privileged bool) []specs.Mount {
	sysMode := "ro"
	if privileged {
		sysMode = "rw"
	}
	return []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: devShm, Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", sysMode}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", sysMode}},
	}
}

// LookupMount returns the mount that holds path (already free of
// symbolic links), from /proc/self/mountinfo: the one with the longest
// mount point above path, the most recent when several share it.
func LookupMount(p string) (*mountinfo.Info, error) {
	infos, err := mountinfo.GetMounts(mountinfo.ParentsFilter(p))
	if err != nil {
		return nil, fmt.Errorf("read mountinfo for %s: %w", p, err)
	}
	var best *mountinfo.Info
	for _, info := range infos {
		if best == nil || len(info.Mountpoint) >= len(best.Mountpoint) {
			best = info
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no mount holds %s", p)
	}
	return best, nil
}

// hasOptional reports whether a mountinfo optional-fields string has a
// field with one of the prefixes ("shared:", "master:").
func hasOptional(optional string, prefixes ...string) bool {
	for _, f := range strings.Fields(optional) {
		for _, p := range prefixes {
			if strings.HasPrefix(f, p) {
				return true
			}
		}
	}
	return false
}

// suppliedMount is a bind mount from the host: a volume or a sandbox file.
type suppliedMount struct {
	field string // names the input field in errors
	dst   string // cleaned container path
	src   string
	ro    bool
	prop  sandbox.Propagation
}

// buildMounts returns the spec's mounts and the root propagation they
// need ("" when the runtime default will do).
func buildMounts(in *Input, privileged bool) ([]specs.Mount, string, error) {
	c := in.Container
	var supplied []suppliedMount
	seen := map[string]string{}
	for i, m := range c.Mounts {
		field := fmt.Sprintf("Mounts[%d]", i)
		if !path.IsAbs(m.ContainerPath) {
			return nil, "", fmt.Errorf("container %q: %s.ContainerPath %q is not absolute: %w", c.Name, field, m.ContainerPath, sandbox.ErrInvalid)
		}
		dst := path.Clean(m.ContainerPath)
		if dst == "/" {
			return nil, "", fmt.Errorf("container %q: %s.ContainerPath must not be the root directory: %w", c.Name, field, sandbox.ErrInvalid)
		}
		if prev, dup := seen[dst]; dup {
			return nil, "", fmt.Errorf("container %q: %s.ContainerPath %q is also the path of %s: %w", c.Name, field, dst, prev, sandbox.ErrInvalid)
		}
		seen[dst] = field
		supplied = append(supplied, suppliedMount{field: field, dst: dst, src: m.HostPath, ro: m.ReadOnly, prop: m.Propagation})
	}
	ro := c.Security.ReadOnlyRootfs
	for _, f := range []struct {
		field, src, dst string
		ro              bool
	}{
		{"HostnamePath", in.HostnamePath, etcHostname, ro},
		{"HostsPath", in.HostsPath, etcHosts, ro},
		{"ResolvConfPath", in.ResolvConfPath, etcResolvConf, ro},
		{"ShmPath", in.ShmPath, devShm, false},
	} {
		if f.src == "" {
			continue
		}
		if _, overridden := seen[f.dst]; overridden {
			continue
		}
		supplied = append(supplied, suppliedMount{field: f.field, dst: f.dst, src: f.src, ro: f.ro, prop: sandbox.PropagationPrivate})
	}
	// Parents before children: fewer path components first, stable so
	// equal depths keep their order.
	slices.SortStableFunc(supplied, func(a, b suppliedMount) int {
		return strings.Count(a.dst, "/") - strings.Count(b.dst, "/")
	})

	lookup := in.LookupMount
	if lookup == nil {
		lookup = LookupMount
	}
	var binds []specs.Mount
	rootProp := ""
	for _, s := range supplied {
		m, prop, err := bindMount(s, lookup)
		if err != nil {
			return nil, "", fmt.Errorf("container %q: %w", c.Name, err)
		}
		switch {
		case prop == "rshared":
			rootProp = "rshared"
		case prop == "rslave" && rootProp != "rshared":
			rootProp = "rslave"
		}
		binds = append(binds, m)
	}

	_, devSupplied := seen["/dev"]
	mounts := make([]specs.Mount, 0, 7+len(binds))
	for _, d := range defaultMounts(privileged) {
		if slices.ContainsFunc(supplied, func(s suppliedMount) bool { return s.dst == d.Destination }) {
			continue
		}
		if devSupplied && strings.HasPrefix(d.Destination, "/dev/") {
			continue
		}
		mounts = append(mounts, d)
	}
	return append(mounts, binds...), rootProp, nil
}

// bindMount validates a supplied mount and turns it into a recursive bind
// mount with its propagation; it also returns that propagation.
func bindMount(s suppliedMount, lookup func(string) (*mountinfo.Info, error)) (specs.Mount, string, error) {
	if !filepath.IsAbs(s.src) {
		return specs.Mount{}, "", fmt.Errorf("%s host path %q is not absolute: %w", s.field, s.src, sandbox.ErrInvalid)
	}
	src, err := filepath.EvalSymlinks(s.src)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return specs.Mount{}, "", fmt.Errorf("%s host path: %w: %w", s.field, err, sandbox.ErrInvalid)
		}
		return specs.Mount{}, "", fmt.Errorf("%s host path: %w", s.field, err)
	}
	var prop string
	switch s.prop {
	case sandbox.PropagationPrivate, "":
		prop = "rprivate"
	case sandbox.PropagationHostToContainer:
		prop = "rslave"
		info, err := lookup(src)
		if err != nil {
			return specs.Mount{}, "", fmt.Errorf("%s: %w", s.field, err)
		}
		if !hasOptional(info.Optional, "shared:", "master:") {
			return specs.Mount{}, "", fmt.Errorf("%s: propagation %s needs %s on a shared or slave mount, but %s is private: %w",
				s.field, s.prop, src, info.Mountpoint, sandbox.ErrInvalid)
		}
	case sandbox.PropagationBidirectional:
		prop = "rshared"
		info, err := lookup(src)
		if err != nil {
			return specs.Mount{}, "", fmt.Errorf("%s: %w", s.field, err)
		}
		if !hasOptional(info.Optional, "shared:") {
			return specs.Mount{}, "", fmt.Errorf("%s: propagation %s needs %s on a shared mount, but %s is not shared: %w",
				s.field, s.prop, src, info.Mountpoint, sandbox.ErrInvalid)
		}
	default:
		return specs.Mount{}, "", fmt.Errorf("%s: unknown propagation %q: %w", s.field, s.prop, sandbox.ErrInvalid)
	}
	mode := "rw"
	if s.ro {
		mode = "ro"
	}
	return specs.Mount{
		Destination: s.dst,
		Type:        "bind",
		Source:      src,
		Options:     []string{"rbind", prop, mode},
	}, prop, nil
}
