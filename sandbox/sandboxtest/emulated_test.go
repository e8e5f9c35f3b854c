package sandboxtest_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// The suite's tests of kernel features (isolation, shared PID namespace,
// security) only run for real against a native runner. So that their own
// logic is exercised everywhere, these tests run the whole suite against
// the fake with a Script that answers testbox's probing commands the way a
// correct kernel-backed runner makes them answer.

// emulatedKernel answers testbox's probes as a correct runner would; flaws
// turns individual answers wrong, to show the suite notices.
type emulatedKernel struct {
	// leakyPS makes ps list the node's processes.
	leakyPS bool
	// writableRootfs ignores ReadOnlyRootfs.
	writableRootfs bool
}

func (k emulatedKernel) script(sb *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
	argv := fake.MergedCommand(c)
	if len(argv) < 2 || path.Base(argv[0]) != "testbox" {
		return fake.Interpret(sb, c)
	}
	args := argv[2:]
	done := func(code int32, out ...string) fake.Behavior {
		return fake.Behavior{Stdout: out, Exits: true, ExitCode: code}
	}
	switch argv[1] {
	case "pid":
		if sb.SharePID {
			return done(0, "7")
		}
		return done(0, "1")
	case "ps":
		switch {
		case k.leakyPS:
			return done(0, "1 systemd", "2 kthreadd", "77 testbox", "78 testbox", "79 testbox")
		case sb.SharePID:
			return done(0, "1 pause", "8 testbox")
		}
		return done(0, "1 testbox")
	case "orphan":
		return done(0, "9")
	case "listen":
		return fake.Behavior{Stdout: []string{"listening on " + args[0]}}
	case "dial":
		return done(0, "hello from "+sb.Hostname)
	case "mounts":
		lines := []string{"20 1 0:30 / / rw,relatime - overlay overlay rw"}
		for i, m := range c.Mounts {
			lines = append(lines, fmt.Sprintf("%d 20 0:31 / %s rw,relatime - ext4 /dev/sda rw", 21+i, m.ContainerPath))
		}
		return done(0, lines...)
	case "id":
		uid, gid := int64(0), int64(0)
		if c.Security.RunAsUser != nil {
			uid = *c.Security.RunAsUser
		}
		if c.Security.RunAsGroup != nil {
			gid = *c.Security.RunAsGroup
		}
		return done(0, fmt.Sprintf("uid=%d gid=%d groups=%d", uid, gid, gid))
	case "caps":
		nnp := 0
		if c.Security.NoNewPrivs {
			nnp = 1
		}
		return done(0, fmt.Sprintf("CapEff=00000000a80425fb CapBnd=00000000a80425fb CapPrm=00000000a80425fb NoNewPrivs=%d", nnp))
	case "rawsock":
		if slices.Contains(c.Security.CapDrop, "NET_RAW") {
			return done(1, "operation not permitted")
		}
		return done(0, "ok")
	case "write":
		return k.write(c, args[0], args[1])
	}
	return fake.Interpret(sb, c)
}

// write writes through a volume to the host (at CreateContainer, which is
// early but harmless here), or into the emulated rootfs.
func (k emulatedKernel) write(c *sandbox.ContainerConfig, p, data string) fake.Behavior {
	fail := fake.Behavior{Stderr: []string{"read-only file system"}, Exits: true, ExitCode: 1}
	for _, m := range c.Mounts {
		rel, err := filepath.Rel(m.ContainerPath, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if m.ReadOnly {
			return fail
		}
		if err := os.WriteFile(filepath.Join(m.HostPath, rel), []byte(data), 0o644); err != nil {
			return fake.Behavior{Stderr: []string{err.Error()}, Exits: true, ExitCode: 1}
		}
		return fake.Behavior{Stdout: []string{"ok"}, Exits: true}
	}
	if c.Security.ReadOnlyRootfs && !k.writableRootfs {
		return fail
	}
	return fake.Behavior{Stdout: []string{"ok"}, Exits: true}
}

func emulatedEnv(k emulatedKernel) sandboxtest.Env {
	return sandboxtest.Env{
		NewRunner: func(t *testing.T) sandbox.SandboxRunner {
			r, err := fake.New(fake.WithBehavior(k.script))
			require.NoError(t, err)
			return r
		},
		Reopen: func(t *testing.T, old sandbox.SandboxRunner) sandbox.SandboxRunner {
			return old.(*fake.Runner).Reopen()
		},
		Features: sandboxtest.Features{
			Network: true, Exec: true, Events: true, Logs: true, OOM: true,
			Isolation: true, SharedPID: true, Security: true, Restart: true,
		},
	}
}

// TestSuiteOnEmulatedKernel runs every test of the suite, the kernel ones
// included, against the fake answering as a correct runner.
func TestSuiteOnEmulatedKernel(t *testing.T) {
	sandboxtest.Run(t, emulatedEnv(emulatedKernel{}))
}
