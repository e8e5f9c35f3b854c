package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/cnitest"
	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/proxy"
)

const (
	nodeName    = "node-a"
	serviceCIDR = "10.96.0.0/12"
	backendPort = 8080
)

var clusterCIDR = netip.MustParsePrefix("10.251.0.0/16")

// node is a throwaway node: a namespace standing in for the host with a
// pod bridge (forwarding on, br_netfilter's iptables calls off unless
// asked), an uplink the service range is routed to (standing in for the
// host's default route), and a fake API.
type node struct {
	env    *cnitest.Env
	bridge *cni.Bridge
	client *fake.Clientset
	uplink string
}

func newNode(t *testing.T) *node {
	t.Helper()
	return newNodeBrNF(t, false)
}

// newNodeBrNF is newNode with bridge-nf-call-iptables on or off: with it
// on, bridged IPv4 frames also traverse the IPv4 hooks (a host running
// Docker has that); the proxy must work either way.
func newNodeBrNF(t *testing.T, brnfOn bool) *node {
	t.Helper()
	env := cnitest.NewEnv(t)
	br, err := cni.NewBridge(cni.BridgeConfig{PodCIDR: env.PodCIDR, StateDir: env.StateDir},
		cni.WithNodeNetNS(env.NodeNS.Path()), cni.WithBridgeName(env.BridgeName), cni.WithIPForward(true))
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, br.Cleanup(context.Background()))
		assert.NoError(t, br.Close())
	})
	n := &node{env: env, bridge: br, client: fake.NewClientset(), uplink: "pksvc" + env.Suffix}
	t.Cleanup(func() {
		assert.NotContains(t, n.tables(t), env.TableName, "no proxy table is left behind")
	})
	// Pods on the bridge reach ClusterIPs through the node's routing, not
	// through bridge netfilter hooks: prove it by turning them off.
	const brnf = "/proc/sys/net/bridge/bridge-nf-call-iptables"
	val := "0"
	if brnfOn {
		val = "1"
	}
	require.NoError(t, env.NodeNS.Do(func() error {
		err := os.WriteFile(brnf, []byte(val), 0o644)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}))
	h, err := env.NodeNS.Handle()
	require.NoError(t, err)
	defer h.Close()
	// The uplink is a veth whose far end sits, up and addressless, in a
	// sink namespace: what is routed there goes nowhere. Removing the
	// sink namespace removes the pair.
	sink := env.NewPodNS(t)
	sinkFd, err := vnetns.GetFromPath(sink.Path())
	require.NoError(t, err)
	defer sinkFd.Close()
	la := netlink.NewLinkAttrs()
	la.Name = n.uplink
	require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "sink", PeerNamespace: netlink.NsFd(int(sinkFd))}))
	sh, err := sink.Handle()
	require.NoError(t, err)
	defer sh.Close()
	peer, err := sh.LinkByName("sink")
	require.NoError(t, err)
	require.NoError(t, sh.LinkSetUp(peer))
	l, err := h.LinkByName(n.uplink)
	require.NoError(t, err)
	require.NoError(t, h.LinkSetUp(l))
	_, dst, _ := net.ParseCIDR(serviceCIDR)
	require.NoError(t, h.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst}))
	return n
}

// proxier returns a Proxier for the node.
func (n *node) proxier(t *testing.T, mut ...func(*proxy.Config)) *proxy.Proxier {
	t.Helper()
	cfg := proxy.Config{
		Client:      n.client,
		NodeName:    nodeName,
		Table:       n.env.TableName,
		ClusterCIDR: clusterCIDR,
		NetNS:       n.env.NodeNS.Path(),
	}
	for _, m := range mut {
		m(&cfg)
	}
	p, err := proxy.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, proxy.Cleanup(n.env.NodeNS.Path(), n.env.TableName)) })
	return p
}

func (n *node) tables(t *testing.T) []string {
	t.Helper()
	ns, err := vnetns.GetFromPath(n.env.NodeNS.Path())
	require.NoError(t, err)
	defer ns.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	require.NoError(t, err)
	tables, err := c.ListTables()
	require.NoError(t, err)
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	return names
}

// ipRouteGet runs `ip route get` in the node namespace.
func (n *node) ipRouteGet(t *testing.T, ip string) string {
	t.Helper()
	var out []byte
	require.NoError(t, n.env.NodeNS.Do(func() error {
		var err error
		out, err = exec.Command("ip", "route", "get", ip).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip route get %s: %w: %s", ip, err, out)
		}
		return nil
	}))
	return string(out)
}

type pod struct {
	ns *netns.NS
	ip netip.Addr
}

func (p *pod) path() string { return p.ns.Path() }

func (n *node) addPod(t *testing.T) *pod {
	t.Helper()
	ns := n.env.NewPodNS(t)
	a := n.env.Attachment(ns)
	res, err := n.bridge.Setup(t.Context(), a)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.bridge.Teardown(context.Background(), a)) })
	return &pod{ns: ns, ip: res.PodIPs()[0]}
}

// clusterIP returns a random address of the service range.
func clusterIP() netip.Addr {
	return netip.AddrFrom4([4]byte{10, 96 + cnitest.RandomByte()%16, cnitest.RandomByte(), 1 + cnitest.RandomByte()%254})
}

func newService(name string, ip netip.Addr, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip.String(), ClusterIPs: []string{ip.String()}, Ports: ports,
		},
	}
}

func svcPort(name string, port int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, Protocol: proto}
}

// ep is one endpoint of a slice.
type ep struct {
	ip                    netip.Addr
	notReady, terminating bool
	node                  string
}

func newSlice(svc, name, portName string, port int32, proto corev1.Protocol, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		node := e.node
		if node == "" {
			node = nodeName
		}
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{e.ip.String()},
			Conditions: discoveryv1.EndpointConditions{
				Ready:       ptr.To(!e.notReady && !e.terminating),
				Serving:     ptr.To(!e.notReady),
				Terminating: ptr.To(e.terminating),
			},
			NodeName: ptr.To(node),
		})
	}
	return s
}

func (n *node) create(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			_, err = n.client.CoreV1().Services(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, err = n.client.DiscoveryV1().EndpointSlices(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
		default:
			t.Fatalf("create %T", o)
		}
		require.NoError(t, err)
	}
}

func (n *node) updateSlice(t *testing.T, s *discoveryv1.EndpointSlice) {
	t.Helper()
	_, err := n.client.DiscoveryV1().EndpointSlices(s.Namespace).Update(t.Context(), s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// addExternal connects a namespace outside the pod network (10.252.x.2/30)
// to the node, routing the service range through it.
func (n *node) addExternal(t *testing.T) (*netns.NS, netip.Addr) {
	t.Helper()
	ext := n.env.NewPodNS(t)
	r := cnitest.RandomByte()
	nodeSide := netip.MustParsePrefix(fmt.Sprintf("10.252.%d.1/30", r))
	extSide := netip.MustParsePrefix(fmt.Sprintf("10.252.%d.2/30", r))
	nh, err := n.env.NodeNS.Handle()
	require.NoError(t, err)
	defer nh.Close()
	eh, err := ext.Handle()
	require.NoError(t, err)
	defer eh.Close()
	extFd, err := vnetns.GetFromPath(ext.Path())
	require.NoError(t, err)
	defer extFd.Close()
	la := netlink.NewLinkAttrs()
	la.Name = "pkext" + n.env.Suffix
	require.NoError(t, nh.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "uplink", PeerNamespace: netlink.NsFd(int(extFd))}))
	up := func(h *netlink.Handle, name string, p netip.Prefix) netlink.Link {
		l, err := h.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}}))
		require.NoError(t, h.LinkSetUp(l))
		return l
	}
	up(nh, la.Name, nodeSide)
	l := up(eh, "uplink", extSide)
	_, dst, _ := net.ParseCIDR(serviceCIDR)
	require.NoError(t, eh.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: dst, Gw: nodeSide.Addr().AsSlice()}))
	lo, err := eh.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, eh.LinkSetUp(lo))
	return ext, extSide.Addr()
}

type discoveryEndpoint = discoveryv1.Endpoint

var (
	timeNow = time.Now
	second  = time.Second
)

func cut(s string) (string, string, bool) { return strings.Cut(s, "|") }
