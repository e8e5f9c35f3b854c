package ipam_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle/ipam"
)

func runAllocator(t *testing.T, c *cluster, cfg ipam.Config) func() {
	return c.run(t, map[string]controller.NewFunc{
		ipam.Name: func(ctx *controller.Context) (controller.Controller, error) { return ipam.New(ctx, cfg) },
	})
}

func createNode(t *testing.T, c *cluster, name string, podCIDRs ...string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDRs[0], podCIDRs
	}
	_, err := c.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitCIDRs waits until every named node has subnets and returns them.
func waitCIDRs(t *testing.T, c *cluster, names ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	eventually(t, fmt.Sprintf("%d nodes with pod CIDRs", len(names)), func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(n.Spec.PodCIDRs) == 0 {
				return false, nil
			}
			if n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
				return false, fmt.Errorf("node %s: podCIDR %q is not podCIDRs[0] %v", name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
			}
			out[name] = n.Spec.PodCIDRs
		}
		return true, nil
	})
	return out
}

// requireDisjoint fails if two of the subnets overlap.
func requireDisjoint(t *testing.T, byNode map[string][]string) {
	t.Helper()
	var all []netip.Prefix
	owner := map[netip.Prefix]string{}
	for node, cidrs := range byNode {
		for _, s := range cidrs {
			p := netip.MustParsePrefix(s)
			for _, q := range all {
				require.False(t, p.Overlaps(q), "node %s's %s overlaps node %s's %s", node, p, owner[q], q)
			}
			all = append(all, p)
			owner[p] = node
		}
	}
}

func TestAssignsDisjointCIDRs(t *testing.T) {
	c := newCluster(t)
	runAllocator(t, c, ipam.Config{})
	for _, n := range []string{"a", "b", "c"} {
		createNode(t, c, n)
	}
	got := waitCIDRs(t, c, "a", "b", "c")
	requireDisjoint(t, got)
	cluster := netip.MustParsePrefix(ipam.DefaultClusterCIDR)
	for node, cidrs := range got {
		require.Len(t, cidrs, 1)
		p := netip.MustParsePrefix(cidrs[0])
		assert.True(t, cluster.Contains(p.Addr()), "%s of %s within %s", p, node, cluster)
		assert.Equal(t, ipam.DefaultNodeMaskSizeIPv4, p.Bits())
	}
}

// TestConcurrentNodeCreation: many nodes registered at once never share
// a subnet.
func TestConcurrentNodeCreation(t *testing.T) {
	c := newCluster(t)
	runAllocator(t, c, ipam.Config{})
	var names []string
	var wg sync.WaitGroup
	for i := range 40 {
		name := fmt.Sprintf("node-%02d", i)
		names = append(names, name)
		wg.Go(func() { createNode(t, c, name) })
	}
	wg.Wait()
	requireDisjoint(t, waitCIDRs(t, c, names...))
}

// TestRebuildsFromTheAPI: a restarted allocator learns the subnets in use
// from the nodes (including one set by someone else) before it allocates
// for nodes registered while it was down.
func TestRebuildsFromTheAPI(t *testing.T) {
	c := newCluster(t)
	stop := runAllocator(t, c, ipam.Config{})
	createNode(t, c, "first")
	createNode(t, c, "second")
	waitCIDRs(t, c, "first", "second")
	stop()

	createNode(t, c, "preset", "10.244.2.0/24")
	createNode(t, c, "third")
	createNode(t, c, "fourth")
	runAllocator(t, c, ipam.Config{})
	got := waitCIDRs(t, c, "first", "second", "preset", "third", "fourth")
	requireDisjoint(t, got)
	assert.Equal(t, []string{"10.244.2.0/24"}, got["preset"], "a node's subnet never changes")
}

// TestExhaustionAndRelease: with two subnets, a third node waits (with a
// CIDRNotAvailable event) until a node is deleted and its subnet freed.
func TestExhaustionAndRelease(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	runAllocator(t, c, ipam.Config{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.10.0.0/23")}})
	createNode(t, c, "a")
	createNode(t, c, "b")
	got := waitCIDRs(t, c, "a", "b")
	createNode(t, c, "c")
	eventually(t, "CIDRNotAvailable event for c", func(ctx context.Context) (bool, error) {
		evs, err := c.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "c").String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "CIDRNotAvailable" {
				return true, nil
			}
		}
		return false, nil
	})
	n, err := c.client.CoreV1().Nodes().Get(ctx, "c", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, n.Spec.PodCIDRs)

	require.NoError(t, c.client.CoreV1().Nodes().Delete(ctx, "a", metav1.DeleteOptions{}))
	assert.Equal(t, got["a"], waitCIDRs(t, c, "c")["c"], "c gets the subnet a released")
}

func TestDualStack(t *testing.T) {
	c := newCluster(t)
	runAllocator(t, c, ipam.Config{
		ClusterCIDRs:     []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10::/56")},
		NodeMaskSizeIPv6: 64,
	})
	createNode(t, c, "a")
	createNode(t, c, "b")
	got := waitCIDRs(t, c, "a", "b")
	requireDisjoint(t, got)
	for _, cidrs := range got {
		require.Len(t, cidrs, 2)
		assert.True(t, netip.MustParsePrefix(cidrs[0]).Addr().Is4())
		assert.True(t, netip.MustParsePrefix(cidrs[1]).Addr().Is6())
		assert.Equal(t, 64, netip.MustParsePrefix(cidrs[1]).Bits())
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := newCluster(t)
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client})
	require.NoError(t, err)
	for name, cfg := range map[string]ipam.Config{
		"none":        {ClusterCIDRs: []netip.Prefix{}},
		"same family": {ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.1.0.0/16")}},
		"three":       {ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("fd00::/56"), netip.MustParsePrefix("10.1.0.0/16")}},
		"mask":        {NodeMaskSizeIPv4: 12},
	} {
		_, err := ipam.New(m.Context(), cfg)
		assert.Error(t, err, name)
	}
}
