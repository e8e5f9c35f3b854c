package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox/native"
)

// TestMain must call native.Init: the runtime re-executes the test binary
// as the containers' supervisor and init.
func TestMain(m *testing.M) {
	native.Init()
	os.Exit(m.Run())
}

// buildDemoWeb compiles the demo image's program (static, no cgo).
func buildDemoWeb(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-web")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/podkit/podkit/examples/demo-web")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// testConfig is a cluster of the example with test-unique host names: a
// node prefix (bridge, cgroup root, run dir derive from it) and a pod range
// of its own.
func testConfig(t *testing.T) podkit.ClusterConfig {
	prefix := "embed-" + cnitest.RandomHex(3)
	cidr := netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 220+int(cnitest.RandomByte())%20))
	return clusterConfig(t.TempDir(), buildDemoWeb(t), prefix, cidr, slog.New(slog.DiscardHandler))
}

// startCluster is the envtest-style helper: a running one-node cluster
// for the test, stopped and removed from the host when the test ends.
func startCluster(t *testing.T, cfg podkit.ClusterConfig) *podkit.Cluster {
	t.Helper()
	testutil.RequireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := podkit.NewCluster(ctx, cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "cluster run")
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer scancel()
		assert.NoError(t, c.Shutdown(sctx), "cluster shutdown")
		assertHostClean(t, c.NodeName(1))
	})
	require.NoError(t, podkit.WaitNodesReady(ctx, c.Client(), 1, 2*time.Minute))
	return c
}

// assertHostClean checks the node left no bridge and no cgroup tree.
func assertHostClean(t *testing.T, node string) {
	t.Helper()
	_, err := netlink.LinkByName(podkit.HostName("pk", node))
	assert.Error(t, err, "bridge of %s removed", node)
	_, err = os.Stat("/sys/fs/cgroup/memory/" + podkit.HostName("podkit-", node))
	assert.True(t, os.IsNotExist(err), "cgroup tree of %s removed", node)
}

// TestPodOutput is what a project's test against a real cluster looks
// like: start one, run a real pod, check what it printed.
func TestPodOutput(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := testConfig(t)
	c := startCluster(t, cfg)
	logs, err := runPod(t.Context(), c.Client(), "writer", c.Image(demoImage), "init", "/tmp/out", "a real container wrote this")
	require.NoError(t, err)
	assert.Equal(t, "init: wrote /tmp/out\n", logs)
}

// TestRun runs the example program's body.
func TestRun(t *testing.T) {
	testutil.RequireRoot(t)
	cfg := testConfig(t)
	var out strings.Builder
	require.NoError(t, run(t.Context(), cfg, &out))
	assert.Equal(t, "pod hello succeeded; its logs:\ninit: wrote /tmp/greeting\n", out.String())
	assertHostClean(t, cfg.NodePrefix+"-1")
}
