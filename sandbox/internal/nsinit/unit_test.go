package nsinit

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseMountOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typ     string
		options []string
		want    mountOpts
		remount uintptr
	}{
		{"proc", "proc", []string{"nosuid", "noexec", "nodev"},
			mountOpts{flags: unix.MS_NOSUID | unix.MS_NOEXEC | unix.MS_NODEV}, 0},
		{"tmpfs data", "tmpfs", []string{"nosuid", "strictatime", "mode=755", "size=65536k"},
			mountOpts{flags: unix.MS_NOSUID | unix.MS_STRICTATIME, data: "mode=755,size=65536k"}, 0},
		{"ro rbind", "bind", []string{"rbind", "ro", "rprivate"},
			mountOpts{flags: unix.MS_BIND | unix.MS_REC | unix.MS_RDONLY, prop: []uintptr{unix.MS_PRIVATE | unix.MS_REC}}, unix.MS_RDONLY},
		{"type bind without option", "bind", nil, mountOpts{flags: unix.MS_BIND}, 0},
		{"rw clears ro", "none", []string{"bind", "ro", "rw", "rslave"},
			mountOpts{flags: unix.MS_BIND, prop: []uintptr{unix.MS_SLAVE | unix.MS_REC}}, 0},
		{"recursive read-only", "bind", []string{"rbind", "rro"},
			mountOpts{flags: unix.MS_BIND | unix.MS_REC, recursiveRO: true}, 0},
		{"later flag wins", "tmpfs", []string{"noexec", "exec", "dev", "nodev"},
			mountOpts{flags: unix.MS_NODEV}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseMountOptions(tc.typ, tc.options)
			assert.Equal(t, tc.want, got)
			if got.bind() {
				assert.Equal(t, tc.remount, got.remountFlags())
			}
		})
	}
}

func TestRootPropagation(t *testing.T) {
	p, err := rootPropagation("")
	require.NoError(t, err)
	assert.Equal(t, uintptr(unix.MS_SLAVE|unix.MS_REC), p)
	p, err = rootPropagation("rprivate")
	require.NoError(t, err)
	assert.Equal(t, uintptr(unix.MS_PRIVATE|unix.MS_REC), p)
	_, err = rootPropagation("sideways")
	require.ErrorIs(t, err, ErrInvalidSpec)
}

func TestStatfsMountFlags(t *testing.T) {
	assert.Equal(t, uintptr(unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_RELATIME),
		statfsMountFlags(unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_RELATIME))
}

func TestCapMask(t *testing.T) {
	m, err := capMask([]string{"CAP_CHOWN", "net_raw", "NET_BIND_SERVICE", "CAP_CHECKPOINT_RESTORE"})
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<0|1<<13|1<<10|1<<40), m)
	_, err = capMask([]string{"CAP_WINGS"})
	require.ErrorContains(t, err, "CAP_WINGS")
	assert.GreaterOrEqual(t, lastCap(), 36, "every supported kernel knows CAP_BLOCK_SUSPEND")
}

func TestPlanNamespaces(t *testing.T) {
	ns := func(list ...specs.LinuxNamespace) *specs.Linux { return &specs.Linux{Namespaces: list} }
	for _, tc := range []struct {
		name    string
		linux   *specs.Linux
		clone   uintptr
		joins   []string
		wantErr error
	}{
		{"no linux section", nil, unix.CLONE_NEWNS, nil, nil},
		{"all new", ns(specs.LinuxNamespace{Type: specs.PIDNamespace}, specs.LinuxNamespace{Type: specs.NetworkNamespace},
			specs.LinuxNamespace{Type: specs.IPCNamespace}, specs.LinuxNamespace{Type: specs.UTSNamespace},
			specs.LinuxNamespace{Type: specs.MountNamespace}, specs.LinuxNamespace{Type: specs.CgroupNamespace}),
			unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS, nil, nil},
		{"pod sandbox", ns(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: "/proc/9/ns/pid"},
			specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: "/run/ns/net"}, specs.LinuxNamespace{Type: specs.MountNamespace}),
			unix.CLONE_NEWNS, []string{"/proc/9/ns/pid", "/run/ns/net"}, nil},
		{"user namespace", ns(specs.LinuxNamespace{Type: specs.UserNamespace}), 0, nil, ErrInvalidSpec},
		{"joined mount namespace", ns(specs.LinuxNamespace{Type: specs.MountNamespace, Path: "/x"}), 0, nil, ErrInvalidSpec},
		{"duplicate", ns(specs.LinuxNamespace{Type: specs.PIDNamespace}, specs.LinuxNamespace{Type: specs.PIDNamespace}), 0, nil, ErrInvalidSpec},
		{"unknown", ns(specs.LinuxNamespace{Type: "wormhole"}), 0, nil, ErrInvalidSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planNamespaces(tc.linux)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.clone, p.clone)
			var joins []string
			for _, j := range p.joins {
				joins = append(joins, j.path)
			}
			assert.Equal(t, tc.joins, joins)
		})
	}
	assert.False(t, newNamespace(nil, specs.CgroupNamespace))
	assert.True(t, newNamespace(nil, specs.MountNamespace))
	assert.True(t, newNamespace(ns(specs.LinuxNamespace{Type: specs.CgroupNamespace}), specs.CgroupNamespace))
}

func TestValidateCreate(t *testing.T) {
	root := t.TempDir()
	good := func() CreateConfig {
		return CreateConfig{StateDir: t.TempDir(), Spec: &specs.Spec{
			Root: &specs.Root{Path: root}, Process: &specs.Process{Args: []string{"/bin/true"}},
		}}
	}
	require.NoError(t, validateCreate(&CreateConfig{StateDir: "/x", Spec: good().Spec}))
	for name, mutate := range map[string]func(*CreateConfig){
		"no spec":        func(c *CreateConfig) { c.Spec = nil },
		"relative root":  func(c *CreateConfig) { c.Spec.Root.Path = "rootfs" },
		"missing root":   func(c *CreateConfig) { c.Spec.Root.Path = "/does/not/exist" },
		"relative state": func(c *CreateConfig) { c.StateDir = "state" },
		"no args":        func(c *CreateConfig) { c.Spec.Process.Args = nil },
		"terminal":       func(c *CreateConfig) { c.Spec.Process.Terminal = true },
		"relative cwd":   func(c *CreateConfig) { c.Spec.Process.Cwd = "tmp" },
		"bad capability": func(c *CreateConfig) {
			c.Spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: []string{"CAP_NOPE"}}
		},
		"no process":      func(c *CreateConfig) { c.Spec.Process = nil },
		"no root section": func(c *CreateConfig) { c.Spec.Root = nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := good()
			mutate(&c)
			require.ErrorIs(t, validateCreate(&c), ErrInvalidSpec)
		})
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data"), []byte("x"), 0o644))
	env := []string{"PATH=/nonexistent:" + dir}

	p, xerr := lookPath("tool", env)
	require.Nil(t, xerr)
	assert.Equal(t, filepath.Join(dir, "tool"), p)

	_, xerr = lookPath("missing", env)
	require.NotNil(t, xerr)
	assert.Equal(t, ExitNotFound, xerr.code)
	assert.Equal(t, `exec: "missing": executable file not found in $PATH`, xerr.msg)

	_, xerr = lookPath(filepath.Join(dir, "missing"), env)
	require.NotNil(t, xerr)
	assert.Equal(t, ExitNotFound, xerr.code)

	if os.Geteuid() != 0 { // root may execute anything with an x bit; data has none
		_, xerr = lookPath("data", env)
		require.NotNil(t, xerr)
		assert.Equal(t, ExitNotExecutable, xerr.code)
	}
	_, xerr = lookPath(filepath.Join(dir, "data"), env)
	require.NotNil(t, xerr)
	assert.Equal(t, ExitNotExecutable, xerr.code)
	assert.Contains(t, xerr.msg, "permission denied")
}

func TestProcessEnv(t *testing.T) {
	assert.Equal(t, []string{"A=1", "HOME=/h"}, processEnv([]string{"A=1", "HOME=/h"}, 0))
	v, ok := envValue([]string{"PATH=/a", "PATH=/b"}, "PATH")
	assert.True(t, ok)
	assert.Equal(t, "/b", v, "the last definition wins, as in getenv")
}

func TestWriteSysctlRejectsTraversal(t *testing.T) {
	for _, k := range []string{"net..ipv4", "../../etc/passwd", "net/ipv4/../x", ""} {
		require.ErrorIs(t, writeSysctl(k, "1"), ErrInvalidSpec, k)
	}
}

func TestPauseELF(t *testing.T) {
	code := pauseELF()
	if code == nil {
		t.Skip("no tiny pause on this architecture")
	}
	assert.Less(t, len(code), 512)
	f, err := elf.NewFile(bytes.NewReader(code))
	require.NoError(t, err)
	assert.Equal(t, elf.EM_X86_64, f.Machine)
	assert.Equal(t, elf.ET_EXEC, f.Type)
	require.Len(t, f.Progs, 2)
	load := f.Progs[0]
	assert.Equal(t, elf.PT_LOAD, load.Type)
	assert.Equal(t, elf.PF_R|elf.PF_X, load.Flags)
	assert.Equal(t, uint64(len(code)), load.Filesz)
	assert.True(t, f.Entry > load.Vaddr && f.Entry < load.Vaddr+load.Memsz)
	assert.Equal(t, elf.PT_GNU_STACK, f.Progs[1].Type)
	assert.Equal(t, elf.PF_R|elf.PF_W, f.Progs[1].Flags, "non-executable stack")
}

// TestPauseSignals runs the pause executable as a plain process (no
// namespaces, no root): SIGCHLD keeps it alive, SIGTERM and SIGINT end it
// with status 0.
func TestPauseSignals(t *testing.T) {
	code := pauseELF()
	if code == nil {
		t.Skip("no tiny pause on this architecture")
	}
	bin, err := writePause(t.TempDir(), code)
	require.NoError(t, err)
	again, err := writePause(filepath.Dir(bin), code)
	require.NoError(t, err)
	assert.Equal(t, bin, again)

	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT} {
		cmd := exec.Command(bin)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		// Until its first instructions have blocked the signals, the
		// default action would apply; wait until it sits in
		// rt_sigtimedwait.
		waiting := func() bool {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", cmd.Process.Pid))
			return strings.HasPrefix(string(b), "128 ")
		}
		require.Eventually(t, waiting, 10*time.Second, time.Millisecond)
		require.NoError(t, cmd.Process.Signal(unix.SIGCHLD))
		require.Eventually(t, waiting, 10*time.Second, time.Millisecond, "still running after SIGCHLD")
		require.NoError(t, cmd.Process.Signal(sig))
		require.NoError(t, cmd.Wait(), "exit status 0 on %v", sig)
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	}
}
