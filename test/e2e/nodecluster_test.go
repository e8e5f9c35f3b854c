package e2e

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

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/internal/testutil"
)

// nodeCluster is a real two-node cluster in this process: podkit.Cluster
// with one node, plus a second node started on its own (podkit.StartNode)
// so a test can stop that node's kubelet alone. kubectl reaches it over
// HTTPS with the kubeconfig the cluster writes.
type nodeCluster struct {
	t          *testing.T
	c          *podkit.Cluster
	k          *kubectl
	node1      string
	node2      string
	n2         *podkit.Node
	stopNode2  func() // stops node 2's kubelet (pods keep running); idempotent
	image      string // demo/web:1
	image2     string // demo/web:2, the same program under another name
	clusterNet netip.Prefix
}

// nodeClusterConfig tunes startNodeCluster.
type nodeClusterConfig struct {
	Controllers controllers.Options
}

// startNodeCluster starts the cluster; everything is stopped and removed
// from the host when the test ends, and the host is checked clean.
func startNodeCluster(t *testing.T, cfg nodeClusterConfig) *nodeCluster {
	t.Helper()
	testutil.RequireRoot(t)
	require.NotEmpty(t, podkitBinary, "podkit binary not built (TestMain)")
	binDir := filepath.Dir(podkitBinary)
	web := filepath.Join(binDir, "demo-web")
	init := filepath.Join(binDir, "podkit-init")
	for _, f := range []string{web, init} {
		_, err := os.Stat(f)
		require.NoError(t, err, "%s is built next to podkit (TestMain or make build)", f)
	}
	prefix := "e2e-nc-" + cnitest.RandomHex(3)
	nc := &nodeCluster{t: t, node1: prefix + "-1", node2: prefix + "-2",
		clusterNet: netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", 160+int(cnitest.RandomByte())%20))}
	dataDir := t.TempDir()
	kubeconfig := filepath.Join(dataDir, "kubeconfig")
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ctx, cancel := context.WithCancel(context.Background())
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: dataDir, Port: -1, Store: app.StoreMemory, NodePrefix: prefix, Nodes: 1,
		ClusterCIDR: nc.clusterNet, Kubeconfig: kubeconfig,
		DemoImages:  map[string]string{"demo/web:1": web, "demo/web:2": web},
		Node:        func(_ int, cfg *podkit.NodeConfig) { cfg.InitBinary = init },
		Controllers: cfg.Controllers, Logger: quiet, ShutdownGrace: 2 * time.Second,
	})
	require.NoError(t, err)
	nc.c = c
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	n2, err := podkit.StartNode(ctx, podkit.NodeConfig{Name: nc.node2, Client: c.Client(), DataDir: filepath.Join(dataDir, "node2"),
		LogDir: filepath.Join(dataDir, "logs"), InitBinary: init, Logger: quiet})
	require.NoError(t, err)
	nc.n2 = n2
	n2ctx, n2cancel := context.WithCancel(ctx)
	n2done := make(chan error, 1)
	go func() { n2done <- n2.Run(n2ctx) }()
	stopped := false
	nc.stopNode2 = func() {
		if !stopped {
			stopped = true
			n2cancel()
			assert.NoError(t, <-n2done, "node 2 run")
		}
	}
	t.Cleanup(func() {
		nc.stopNode2()
		cancel()
		assert.NoError(t, <-done, "cluster run")
		sctx, scancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer scancel()
		assert.NoError(t, n2.Shutdown(sctx), "node 2 shutdown")
		assert.NoError(t, c.Shutdown(sctx), "cluster shutdown")
		for _, n := range []string{nc.node1, nc.node2} {
			assertNodeGone(t, n)
		}
	})
	require.NoError(t, podkit.WaitNodesReady(ctx, c.Client(), 2, 2*time.Minute))
	nc.image, nc.image2 = c.Image("demo/web:1"), c.Image("demo/web:2")
	require.NotEmpty(t, nc.image)
	nc.k = newKubectl(t, testutil.Kubectl(t, 32), 32, &apiServer{Kubeconfig: kubeconfig})
	return nc
}

// in returns a copy of nc that reports to t (for subtests).
func (nc *nodeCluster) in(t *testing.T) *nodeCluster {
	c := *nc
	c.t, c.k = t, nc.k.In(t)
	return &c
}

// long runs a kubectl command that waits on the cluster (rollout status,
// wait, foreground delete) with a limit of its own instead of the
// helper's 30 s, and requires it to succeed.
func (nc *nodeCluster) long(args ...string) string {
	nc.t.Helper()
	ctx, cancel := context.WithTimeout(nc.t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nc.k.bin, args...)
	cmd.Env = nc.k.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(nc.t, err, "kubectl %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}

// podInfo is one pod as kubectl reports it.
type podInfo struct {
	Name, Phase, Node, Ready string
	Deleting                 bool
}

// pods lists the pods matching selector in ns through kubectl.
func (nc *nodeCluster) pods(ns, selector string) []podInfo {
	nc.t.Helper()
	out := nc.k.OK("get", "pods", "-n", ns, "-l", selector, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var ps []podInfo
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		p := podInfo{Name: f[0], Phase: f[1], Node: f[2]}
		if len(f) > 3 {
			p.Ready = f[3]
		}
		p.Deleting = len(f) > 4
		ps = append(ps, p)
	}
	return ps
}

// runningReady are the pods Running, Ready and not being deleted.
func (nc *nodeCluster) runningReady(ns, selector string) []podInfo {
	var out []podInfo
	for _, p := range nc.pods(ns, selector) {
		if p.Phase == "Running" && p.Ready == "True" && !p.Deleting {
			out = append(out, p)
		}
	}
	return out
}

// waitPods waits until exactly n pods of selector exist, all Running and
// Ready, and returns them.
func (nc *nodeCluster) waitPods(ns, selector string, n int) []podInfo {
	nc.t.Helper()
	var got []podInfo
	require.Eventually(nc.t, func() bool {
		all := nc.pods(ns, selector)
		got = nc.runningReady(ns, selector)
		return len(all) == n && len(got) == n
	}, 3*time.Minute, 250*time.Millisecond, "%d pods %s Running and Ready in %s (last: %+v)", n, selector, ns, got)
	return got
}

// waitDeploy waits until `kubectl get deploy` shows ready/replicas as want
// (e.g. "3/3") with every replica updated and available.
func (nc *nodeCluster) waitDeploy(ns, name string, replicas int) {
	nc.t.Helper()
	want := fmt.Sprintf("%d/%d %d %d", replicas, replicas, replicas, replicas)
	var last string
	require.Eventually(nc.t, func() bool {
		r := nc.k.Run("get", "deploy", name, "-n", ns, "--no-headers")
		f := strings.Fields(r.Stdout)
		if r.Code != 0 || len(f) < 4 {
			return false
		}
		last = strings.Join(f[1:4], " ")
		return last == want
	}, 3*time.Minute, 250*time.Millisecond, "kubectl get deploy %s: READY UP-TO-DATE AVAILABLE = %s (last %q)", name, want, last)
}

// nodesOf counts pods per node.
func nodesOf(ps []podInfo) map[string]int {
	m := map[string]int{}
	for _, p := range ps {
		m[p.Node]++
	}
	return m
}

// gone waits until kubectl finds nothing of kind matching selector in ns.
func (nc *nodeCluster) gone(ns, kind, selector string) {
	nc.t.Helper()
	require.Eventually(nc.t, func() bool {
		r := nc.k.Run("get", kind, "-n", ns, "-l", selector, "-o", "name")
		return r.Code == 0 && strings.TrimSpace(r.Stdout) == ""
	}, 3*time.Minute, 250*time.Millisecond, "no %s %s left in %s", kind, selector, ns)
}
