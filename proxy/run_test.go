package proxy_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/proxy"
)

// eventually polls cond until it holds, failing the test after 10 s. It
// waits for asynchronous propagation; it asserts nothing about speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// served asks a few times and reports who served, ignoring failures.
func served(t *testing.T, from string, to netip.AddrPort, n int) map[netip.Addr]int {
	got := map[netip.Addr]int{}
	for range n {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		who, _, err := ask(ctx, from, to, corev1.ProtocolTCP)
		cancel()
		if err == nil {
			got[who]++
		}
	}
	return got
}

// TestRunFollowsChangesAndRemovesTable runs the proxy on informers: it
// programs existing Services, follows endpoints becoming ready and
// unready, records its metrics and removes its table when ctx ends.
func TestRunFollowsChangesAndRemovesTable(t *testing.T) {
	n := newNode(t)
	client := n.addPod(t)
	b1, b2 := n.addPod(t), n.addPod(t)
	for _, b := range []*pod{b1, b2} {
		serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
	}
	ip := clusterIP()
	vip := netip.AddrPortFrom(ip, 80)
	slice := newSlice("web", "web-1", "http", backendPort, corev1.ProtocolTCP, ep{ip: b1.ip})
	n.create(t, newService("web", ip, svcPort("http", 80, corev1.ProtocolTCP)), slice)
	reg := prometheus.NewRegistry()
	p := n.proxier(t, func(c *proxy.Config) { c.Registerer = reg })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	eventually(t, "the first backend serves", func() bool { return served(t, client.path(), vip, 1)[b1.ip] == 1 })
	assert.ErrorIs(t, p.Run(ctx), proxy.ErrRunning)

	// The second backend becomes ready; the change carries the trigger
	// time the EndpointSlice controller sets.
	slice.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().Format(time.RFC3339Nano)}
	slice.Endpoints = append(slice.Endpoints, newSlice("", "", "", 0, "", ep{ip: b2.ip}).Endpoints...)
	n.updateSlice(t, slice)
	eventually(t, "the second backend serves", func() bool { return served(t, client.path(), vip, 10)[b2.ip] > 0 })

	// The first stops being ready.
	slice.Endpoints[0].Conditions.Ready = ptrTo(false)
	n.updateSlice(t, slice)
	eventually(t, "only the second backend serves", func() bool {
		got := served(t, client.path(), vip, 10)
		return got[b2.ip] == 10
	})
	require.NoError(t, p.Sync(ctx), "Sync works next to Run")

	cancel()
	require.NoError(t, <-done)
	done <- nil // for the cleanup
	assert.NotContains(t, n.tables(t), n.env.TableName, "Run removes its table on shutdown")

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetHistogram().GetSampleCount() > 0 || m.GetGauge().GetValue() > 0 {
				got[f.GetName()] = true
			}
		}
	}
	for _, name := range []string{
		"kubeproxy_sync_proxy_rules_duration_seconds",
		"kubeproxy_sync_full_proxy_rules_duration_seconds",
		"kubeproxy_sync_partial_proxy_rules_duration_seconds",
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds",
		"kubeproxy_network_programming_duration_seconds",
	} {
		assert.True(t, got[name], "metric %s recorded", name)
	}
}

// TestCleanupRemovesLeftoverTable: the table of a proxy that never shut
// down is removed by Cleanup, which is idempotent.
func TestCleanupRemovesLeftoverTable(t *testing.T) {
	n := newNode(t)
	ip := clusterIP()
	n.create(t, newService("web", ip, svcPort("http", 80, corev1.ProtocolTCP)),
		newSlice("web", "web-1", "http", backendPort, corev1.ProtocolTCP, ep{ip: netip.MustParseAddr("10.251.0.9")}))
	p := n.proxier(t)
	require.NoError(t, p.Sync(t.Context()))
	require.Contains(t, n.tables(t), n.env.TableName)
	require.NoError(t, proxy.Cleanup(n.env.NodeNS.Path(), n.env.TableName))
	assert.NotContains(t, n.tables(t), n.env.TableName)
	require.NoError(t, proxy.Cleanup(n.env.NodeNS.Path(), n.env.TableName), "a missing table is fine")
}

// TestRunResyncRepairsDrift: the periodic full resync restores rules
// removed behind the proxy's back.
func TestRunResyncRepairsDrift(t *testing.T) {
	n := newNode(t)
	client, b := n.addPod(t), n.addPod(t)
	serve(t, b.path(), b.ip, backendPort, corev1.ProtocolTCP)
	ip := clusterIP()
	vip := netip.AddrPortFrom(ip, 80)
	n.create(t, newService("web", ip, svcPort("http", 80, corev1.ProtocolTCP)),
		newSlice("web", "web-1", "http", backendPort, corev1.ProtocolTCP, ep{ip: b.ip}))
	p := n.proxier(t, func(c *proxy.Config) { c.SyncPeriod = 200 * time.Millisecond })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()
	eventually(t, "the backend serves", func() bool { return served(t, client.path(), vip, 1)[b.ip] == 1 })
	require.NoError(t, proxy.Cleanup(n.env.NodeNS.Path(), n.env.TableName))
	require.NotContains(t, n.tables(t), n.env.TableName)
	eventually(t, "the resync restores the rules", func() bool { return served(t, client.path(), vip, 1)[b.ip] == 1 })
}
