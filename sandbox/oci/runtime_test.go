package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/sandbox/oci"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// flavors are the OCI runtimes under test, with what each says when a
// container's entrypoint is not found.
var flavors = []struct {
	name     string
	notFound string
}{
	{"runc", `exec: "nope": executable file not found in $PATH`},
	{"crun", "executable file `nope` not found in $PATH"},
}

// forEachFlavor runs fn on a fresh node for runc and for crun.
func forEachFlavor(t *testing.T, fn func(t *testing.T, n *node, name, notFound string)) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			if f.name == "crun" {
				requireCrunCgroups(t)
			}
			fn(t, newNode(t), f.name, f.notFound)
		})
	}
}

func testbox(t *testing.T, name string, args ...string) *sandbox.ContainerConfig {
	m, _ := testutil.TestboxMounts(t)
	return &sandbox.ContainerConfig{Name: name, Command: []string{sandboxtest.Testbox}, Args: args, Rootfs: m}
}

// runPod runs a sandbox removed at the end of the test.
func runPod(t *testing.T, r sandbox.SandboxRunner, name string) *sandbox.Sandbox {
	t.Helper()
	sb, err := r.RunPodSandbox(t.Context(), podConfig(name))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.RemovePodSandbox(context.Background(), sb.ID)) })
	return sb
}

// A container whose entrypoint does not exist fails CreateContainer with
// the runtime's own words, and leaves nothing behind in the runtime.
func TestCreateFailureIsClear(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, n *node, name, notFound string) {
		h := n.handler(t, name)
		r := n.runner(t, name, h)
		t.Cleanup(func() { r.Close() })
		sb := runPod(t, r, "fail")
		assert.Equal(t, name, sb.RuntimeHandler, "NewRunner's handler is the default")

		cfg := testbox(t, "broken")
		cfg.Command = []string{"nope"}
		_, err := r.CreateContainer(t.Context(), sb.ID, cfg)
		require.Error(t, err)
		t.Logf("CreateContainer: %v", err)
		assert.Contains(t, err.Error(), notFound)
		assert.Contains(t, err.Error(), `create container "broken"`)

		_, cs, err := r.List(t.Context())
		require.NoError(t, err)
		assert.Empty(t, cs, "the failed container is not listed")
		left, _ := os.ReadDir(h.Root())
		assert.Empty(t, left, "%s state after a failed create", name)
	})
}

// Deleting a container the runtime does not know succeeds; State says it
// does not exist.
func TestDeleteUnknown(t *testing.T) {
	for _, f := range flavors {
		t.Run(f.name, func(t *testing.T) {
			testutil.RequireRoot(t)
			if f.name == "crun" {
				requireCrunCgroups(t)
			}
			root := filepath.Join(t.TempDir(), "state")
			h, err := oci.New(f.name, oci.WithRoot(root), oci.WithTempDir(t.TempDir()))
			require.NoError(t, err)
			b := &native.Bundle{ID: "unknown-" + f.name, Dir: t.TempDir()}
			require.NoError(t, h.Delete(t.Context(), b))
			require.NoError(t, h.Delete(t.Context(), b), "and again")

			_, err = h.State(t.Context(), b.ID)
			require.ErrorIs(t, err, oci.ErrNotExist)
			var cerr *oci.CommandError
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, "state", cerr.Op)
			assert.Equal(t, b.ID, cerr.ID)
		})
	}
}

// The runtime's view of a running container, and exec's edge cases: a
// command the runtime cannot start is an error, not an exit code; one
// whose time runs out is killed, not left running in the container.
func TestStateAndExec(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, n *node, name, notFound string) {
		h := n.handler(t, name)
		r := n.runner(t, name, h)
		t.Cleanup(func() { r.Close() })
		sb := runPod(t, r, "exec")
		id, err := r.CreateContainer(t.Context(), sb.ID, testbox(t, "app", "sleep", "inf"))
		require.NoError(t, err)
		require.NoError(t, r.StartContainer(t.Context(), id))

		st, err := h.State(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, id, st.ID)
		assert.Equal(t, "running", string(st.Status))
		cs, err := r.ContainerStatus(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, cs.PID, st.Pid, "the supervisor adopted the process the runtime created")

		_, err = r.ExecSync(t.Context(), id, []string{"nope"}, 10*time.Second)
		require.Error(t, err)
		assert.Contains(t, err.Error(), notFound)

		_, err = r.ExecSync(t.Context(), id, []string{sandboxtest.Testbox, "sleep", "inf"}, 200*time.Millisecond)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		res, err := r.ExecSync(t.Context(), id, []string{sandboxtest.Testbox, "ps"}, 10*time.Second)
		require.NoError(t, err)
		require.Equal(t, int32(0), res.ExitCode)
		// `testbox ps` prints "pid comm" lines. crun's failed exec above
		// may leave a zombie "crun" for the host's init to reap; it is not
		// the container's business.
		var boxes []string
		for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[1] == "testbox" {
				boxes = append(boxes, f[0])
			}
		}
		assert.Len(t, boxes, 2, "only the entrypoint and ps itself run; the timed-out exec was killed: %s", res.Stdout)
		assert.Contains(t, boxes, "1", "the entrypoint is PID 1")
	})
}
