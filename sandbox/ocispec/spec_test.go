package ocispec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func isRoot() bool { return os.Geteuid() == 0 }

// testInput returns a valid Input over a fresh rootfs with testPasswd and
// testGroup, joining pinned-looking namespaces.
func testInput(t *testing.T) Input {
	t.Helper()
	return Input{
		SandboxID:   "sb1",
		ContainerID: "c1",
		Sandbox: &sandbox.SandboxConfig{
			Pod:      sandbox.PodMeta{Name: "web-0", Namespace: "prod", UID: "uid-123"},
			Hostname: "web-0",
		},
		Container: &sandbox.ContainerConfig{
			Name:        "app",
			Image:       "registry.local/app:1",
			ImageConfig: sandbox.ImageConfig{Entrypoint: []string{"/bin/app"}, Env: []string{"A=1"}},
		},
		RootfsPath:      writeRootfs(t, testPasswd, testGroup),
		NetNS:           "/run/podkit/sb1/ns/net",
		IPCNS:           "/run/podkit/sb1/ns/ipc",
		UTSNS:           "/run/podkit/sb1/ns/uts",
		AllCapabilities: []string{"CAP_CHOWN", "CAP_SYS_ADMIN"},
		LookupMount:     fakeMounts(""),
	}
}

func hostDirs(t *testing.T, names ...string) []string {
	t.Helper()
	base := t.TempDir()
	var out []string
	for _, n := range names {
		p := filepath.Join(base, n)
		require.NoError(t, os.MkdirAll(p, 0o755))
		out = append(out, p)
	}
	return out
}

func hostFiles(t *testing.T, names ...string) []string {
	t.Helper()
	base := t.TempDir()
	var out []string
	for _, n := range names {
		p := filepath.Join(base, n)
		require.NoError(t, os.WriteFile(p, []byte(n+"\n"), 0o644))
		out = append(out, p)
	}
	return out
}

func TestGenerateDefaults(t *testing.T) {
	in := testInput(t)
	in.CgroupsPath = "/kubepods/besteffort/poduid-123/c1"
	in.Container.Annotations = map[string]string{"team": "a", AnnotationSandboxID: "spoofed"}
	s, err := Generate(in)
	require.NoError(t, err)

	assert.Equal(t, SpecVersion, s.Version)
	require.NotNil(t, s.Process)
	p := s.Process
	assert.Equal(t, []string{"/bin/app"}, p.Args)
	assert.Equal(t, []string{"PATH=" + DefaultPath, "HOSTNAME=web-0", "A=1"}, p.Env)
	assert.Equal(t, "/", p.Cwd)
	assert.Equal(t, specs.User{UID: 0, GID: 0, AdditionalGids: []uint32{0}}, p.User)
	assert.False(t, p.Terminal)
	assert.False(t, p.NoNewPrivileges)
	assert.Nil(t, p.Rlimits, "rlimits are inherited, never raised")
	assert.Nil(t, p.OOMScoreAdj)
	require.NotNil(t, p.Capabilities)
	assert.Equal(t, DefaultCapabilities(), p.Capabilities.Bounding)
	assert.Equal(t, DefaultCapabilities(), p.Capabilities.Effective)
	assert.Equal(t, DefaultCapabilities(), p.Capabilities.Permitted)
	assert.Empty(t, p.Capabilities.Inheritable)
	assert.Empty(t, p.Capabilities.Ambient)

	assert.Equal(t, &specs.Root{Path: in.RootfsPath}, s.Root)
	assert.Empty(t, s.Hostname, "joined UTS namespace: the sandbox set the hostname")

	l := s.Linux
	require.NotNil(t, l)
	assert.Equal(t, in.CgroupsPath, l.CgroupsPath)
	assert.Equal(t, DefaultMaskedPaths(), l.MaskedPaths)
	assert.Equal(t, DefaultReadonlyPaths(), l.ReadonlyPaths)
	assert.Contains(t, l.MaskedPaths, "/proc/kcore")
	assert.Contains(t, l.ReadonlyPaths, "/proc/sys")
	assert.Empty(t, l.Devices)
	assert.Empty(t, l.Sysctl)
	assert.Nil(t, l.Seccomp)
	require.NotNil(t, l.Resources)
	assert.Equal(t, DeviceRules(false), l.Resources.Devices)

	assert.Equal(t, map[string]string{
		"team":                     "a",
		AnnotationContainerType:    "container",
		AnnotationSandboxID:        "sb1",
		AnnotationContainerName:    "app",
		AnnotationSandboxName:      "web-0",
		AnnotationSandboxNamespace: "prod",
		AnnotationSandboxUID:       "uid-123",
		AnnotationImageName:        "registry.local/app:1",
	}, s.Annotations)

	// The spec survives a JSON round trip (it is written as config.json).
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back specs.Spec
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s.Process.Args, back.Process.Args)
}

func TestGenerateProcessSettings(t *testing.T) {
	in := testInput(t)
	c := in.Container
	c.ImageConfig = sandbox.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"x"}, User: "app", WorkingDir: "/srv", Env: []string{"PATH=/img/bin", "A=1"}}
	c.Args = []string{"serve"}
	c.Env = []string{"A=2"}
	c.Security = sandbox.SecurityConfig{NoNewPrivs: true, CapDrop: []string{"NET_RAW"}, SupplementalGroups: []int64{9}}
	s, err := Generate(in)
	require.NoError(t, err)
	assert.Equal(t, []string{"/entry", "serve"}, s.Process.Args)
	assert.Equal(t, []string{"PATH=/img/bin", "HOSTNAME=web-0", "A=2"}, s.Process.Env)
	assert.Equal(t, "/srv", s.Process.Cwd)
	assert.Equal(t, specs.User{UID: 1000, GID: 1000, AdditionalGids: []uint32{9, 29, 50, 1000}}, s.Process.User)
	assert.True(t, s.Process.NoNewPrivileges)
	assert.NotContains(t, s.Process.Capabilities.Bounding, "CAP_NET_RAW")
	assert.NotContains(t, s.Process.Capabilities.Effective, "CAP_NET_RAW")
	assert.NotContains(t, s.Process.Capabilities.Permitted, "CAP_NET_RAW")
}

func TestGeneratePrivileged(t *testing.T) {
	in := testInput(t)
	in.Container.Security.Privileged = true
	s, err := Generate(in)
	require.NoError(t, err)
	assert.Equal(t, in.AllCapabilities, s.Process.Capabilities.Bounding)
	assert.Equal(t, in.AllCapabilities, s.Process.Capabilities.Effective)
	assert.Empty(t, s.Linux.MaskedPaths)
	assert.Empty(t, s.Linux.ReadonlyPaths)
	assert.Equal(t, []specs.LinuxDeviceCgroup{{Allow: true, Type: "a", Access: "rwm"}}, s.Linux.Resources.Devices)
	assert.Equal(t, []string{"nosuid", "noexec", "nodev", "rw"}, mountAt(t, s.Mounts, "/sys").Options)
	assert.Contains(t, mountAt(t, s.Mounts, "/sys/fs/cgroup").Options, "rw")
}

func TestGenerateAllCapabilitiesDefault(t *testing.T) {
	in := testInput(t)
	in.AllCapabilities = nil
	in.Container.Security.CapAdd = []string{"ALL"}
	s, err := Generate(in)
	require.NoError(t, err)
	cur, err := CurrentCapabilities()
	require.NoError(t, err)
	assert.ElementsMatch(t, cur, s.Process.Capabilities.Bounding)
}

func TestGenerateMaskedPaths(t *testing.T) {
	tests := []struct {
		name   string
		sec    sandbox.SecurityConfig
		masked bool
	}{
		{name: "default", masked: true},
		{name: "unmasked proc", sec: sandbox.SecurityConfig{UnmaskedProc: true}},
		{name: "privileged", sec: sandbox.SecurityConfig{Privileged: true}},
		{name: "read-only rootfs keeps them", sec: sandbox.SecurityConfig{ReadOnlyRootfs: true}, masked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Container.Security = tt.sec
			s, err := Generate(in)
			require.NoError(t, err)
			if tt.masked {
				assert.Equal(t, DefaultMaskedPaths(), s.Linux.MaskedPaths)
				assert.Equal(t, DefaultReadonlyPaths(), s.Linux.ReadonlyPaths)
			} else {
				assert.Empty(t, s.Linux.MaskedPaths)
				assert.Empty(t, s.Linux.ReadonlyPaths)
			}
		})
	}
}

func TestGenerateNamespaces(t *testing.T) {
	node, err := os.Hostname()
	require.NoError(t, err)
	ns := func(t specs.LinuxNamespaceType, p string) specs.LinuxNamespace {
		return specs.LinuxNamespace{Type: t, Path: p}
	}
	tests := []struct {
		name         string
		mutate       func(*Input)
		want         []specs.LinuxNamespace
		wantHostname string
	}{
		{name: "pod namespaces, own pid", mutate: func(*Input) {}, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.IPCNamespace, "/run/podkit/sb1/ns/ipc"), ns(specs.UTSNamespace, "/run/podkit/sb1/ns/uts"),
			ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, "/run/podkit/sb1/ns/net"),
		}},
		{name: "shared pid namespace", mutate: func(in *Input) { in.PIDNS = "/proc/4242/ns/pid" }, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, "/proc/4242/ns/pid"), ns(specs.IPCNamespace, "/run/podkit/sb1/ns/ipc"), ns(specs.UTSNamespace, "/run/podkit/sb1/ns/uts"),
			ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, "/run/podkit/sb1/ns/net"),
		}},
		{name: "host network and ipc, new uts", mutate: func(in *Input) {
			in.NetNS, in.IPCNS, in.UTSNS = "", "", ""
			in.HostNetwork, in.HostIPC = true, true
		}, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.UTSNamespace, ""), ns(specs.MountNamespace, ""),
		}, wantHostname: node}, // Sandbox.Hostname is ignored with the host network
		{name: "everything host", mutate: func(in *Input) {
			in.NetNS, in.IPCNS, in.UTSNS = "", "", ""
			in.HostNetwork, in.HostIPC, in.HostUTS, in.HostPID = true, true, true, true
		}, want: []specs.LinuxNamespace{ns(specs.MountNamespace, "")}},
		{name: "all new", mutate: func(in *Input) { in.NetNS, in.IPCNS, in.UTSNS = "", "", "" }, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.IPCNamespace, ""), ns(specs.UTSNamespace, ""), ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, ""),
		}, wantHostname: "web-0"},
		{name: "explicit hostname in a new uts namespace", mutate: func(in *Input) { in.UTSNS, in.Hostname = "", "custom" }, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.IPCNamespace, "/run/podkit/sb1/ns/ipc"), ns(specs.UTSNamespace, ""),
			ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, "/run/podkit/sb1/ns/net"),
		}, wantHostname: "custom"},
		{name: "cgroup namespace", mutate: func(in *Input) { in.CgroupNS = true }, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.IPCNamespace, "/run/podkit/sb1/ns/ipc"), ns(specs.UTSNamespace, "/run/podkit/sb1/ns/uts"),
			ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, "/run/podkit/sb1/ns/net"), ns(specs.CgroupNamespace, ""),
		}},
		{name: "no cgroup namespace when privileged", mutate: func(in *Input) { in.CgroupNS = true; in.Container.Security.Privileged = true }, want: []specs.LinuxNamespace{
			ns(specs.PIDNamespace, ""), ns(specs.IPCNamespace, "/run/podkit/sb1/ns/ipc"), ns(specs.UTSNamespace, "/run/podkit/sb1/ns/uts"),
			ns(specs.MountNamespace, ""), ns(specs.NetworkNamespace, "/run/podkit/sb1/ns/net"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.mutate(&in)
			s, err := Generate(in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, s.Linux.Namespaces)
			assert.Equal(t, tt.wantHostname, s.Hostname)
		})
	}
}

func TestGenerateHostnameEnv(t *testing.T) {
	node, err := os.Hostname()
	require.NoError(t, err)
	tests := []struct {
		name   string
		mutate func(*Input)
		want   string
	}{
		{name: "sandbox hostname", mutate: func(*Input) {}, want: "web-0"},
		{name: "explicit", mutate: func(in *Input) { in.Hostname = "x" }, want: "x"},
		{name: "host network uses the node's", mutate: func(in *Input) { in.NetNS, in.HostNetwork = "", true }, want: node},
		{name: "no sandbox hostname uses the node's", mutate: func(in *Input) { in.Sandbox.Hostname = "" }, want: node},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.mutate(&in)
			s, err := Generate(in)
			require.NoError(t, err)
			assert.Contains(t, s.Process.Env, "HOSTNAME="+tt.want)
		})
	}
}

func TestGenerateResources(t *testing.T) {
	in := testInput(t)
	limit, shares := int64(64<<20), uint64(512)
	major := int64(10)
	in.Container.Resources = &specs.LinuxResources{
		Memory:  &specs.LinuxMemory{Limit: &limit},
		CPU:     &specs.LinuxCPU{Shares: &shares},
		Devices: []specs.LinuxDeviceCgroup{{Allow: true, Type: "c", Major: &major, Access: "rw"}},
	}
	s, err := Generate(in)
	require.NoError(t, err)
	r := s.Linux.Resources
	require.NotNil(t, r.Memory)
	assert.Equal(t, limit, *r.Memory.Limit)
	assert.Equal(t, shares, *r.CPU.Shares)
	rules := DeviceRules(false)
	assert.Equal(t, rules, r.Devices[:len(rules)], "default rules first")
	assert.Equal(t, in.Container.Resources.Devices[0], r.Devices[len(rules)], "then the container's")

	// The spec does not alias the configuration.
	*r.Memory.Limit = 1
	assert.Equal(t, int64(64<<20), *in.Container.Resources.Memory.Limit)
	assert.Len(t, in.Container.Resources.Devices, 1)
}

func TestDeviceRules(t *testing.T) {
	rules := DeviceRules(false)
	require.NotEmpty(t, rules)
	assert.Equal(t, specs.LinuxDeviceCgroup{Allow: false, Type: "a", Access: "rwm"}, rules[0], "deny all first")
	allowed := map[[2]int64]bool{}
	for _, r := range rules[1:] {
		assert.True(t, r.Allow)
		if r.Major == nil {
			assert.Equal(t, "m", r.Access, "wildcard rules only allow mknod")
			continue
		}
		minor := int64(-1)
		if r.Minor != nil {
			minor = *r.Minor
		}
		allowed[[2]int64{*r.Major, minor}] = true
	}
	for name, dev := range map[string][2]int64{
		"null": {1, 3}, "zero": {1, 5}, "full": {1, 7}, "random": {1, 8}, "urandom": {1, 9},
		"tty": {5, 0}, "ptmx": {5, 2}, "pts": {136, -1},
	} {
		assert.True(t, allowed[dev], name)
	}
	assert.Len(t, allowed, 8)
}

func TestGenerateValidation(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Input)
		wantErr string
	}{
		{name: "no container", mutate: func(in *Input) { in.Container = nil }, wantErr: "Container"},
		{name: "no sandbox", mutate: func(in *Input) { in.Sandbox = nil }, wantErr: "Sandbox"},
		{name: "empty name", mutate: func(in *Input) { in.Container.Name = "" }, wantErr: "Container.Name"},
		{name: "missing rootfs path", mutate: func(in *Input) { in.RootfsPath = "" }, wantErr: "RootfsPath"},
		{name: "relative rootfs path", mutate: func(in *Input) { in.RootfsPath = "rootfs" }, wantErr: "RootfsPath"},
		{name: "rootfs does not exist", mutate: func(in *Input) { in.RootfsPath = filepath.Join(in.RootfsPath, "nope") }, wantErr: "rootfs"},
		{name: "relative cgroups path", mutate: func(in *Input) { in.CgroupsPath = "kubepods/x" }, wantErr: "CgroupsPath"},
		{name: "relative netns", mutate: func(in *Input) { in.NetNS = "ns/net" }, wantErr: "NetNS"},
		{name: "host network with a netns path", mutate: func(in *Input) { in.HostNetwork = true }, wantErr: "NetNS"},
		{name: "host pid with a pidns path", mutate: func(in *Input) { in.PIDNS, in.HostPID = "/proc/1/ns/pid", true }, wantErr: "PIDNS"},
		{name: "no command", mutate: func(in *Input) { in.Container.ImageConfig.Entrypoint = nil }, wantErr: "no command specified"},
		{name: "relative working dir", mutate: func(in *Input) { in.Container.WorkingDir = "srv" }, wantErr: "WorkingDir"},
		{name: "unknown user", mutate: func(in *Input) { in.Container.ImageConfig.User = "ghost" }, wantErr: "ghost"},
		{name: "unknown capability", mutate: func(in *Input) { in.Container.Security.CapAdd = []string{"FLY"} }, wantErr: "FLY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			tt.mutate(&in)
			s, err := Generate(in)
			require.ErrorIs(t, err, sandbox.ErrInvalid)
			assert.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, s)
		})
	}
}
