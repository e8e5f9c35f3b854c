package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/netns"
)

// GatewayAddr is the next hop every pod routes through: a link-local
// address that exists nowhere, resolved by a permanent neighbour entry to
// the MAC of the pod's host-side veth (as Calico does). No bridge, no
// gateway address taken from the PodCIDR, no ARP on the wire.
var GatewayAddr = netip.MustParseAddr("169.254.1.1")

// HostLinkPrefix starts the name of every host-side veth the networker
// creates.
const HostLinkPrefix = "ptp"

// PTPConfig configures NewPTP.
type PTPConfig struct {
	// PodCIDR is the node's pod range; each pod gets one address of it as
	// a /32.
	PodCIDR netip.Prefix
	// StateDir keeps the address allocations (cni.IPAM).
	StateDir string
	// NodeNetNS is the namespace holding the host ends and the routes
	// ("" is the caller's, the host's); tests use a throwaway one.
	NodeNetNS string
	// Forward turns IPv4 forwarding on in the node namespace, which pods
	// need to reach each other and beyond (the bridge networker does the
	// same).
	Forward bool
}

// PTP is a routed point-to-point cni.Networker: one veth pair per pod,
// the pod end holding a /32 and a default route via GatewayAddr, the host
// end holding a /32 route to the pod. The node routes every pod
// individually, so pod-to-pod traffic on a node is plain L3 forwarding.
type PTP struct {
	cfg  PTPConfig
	ipam *cni.IPAM
}

var (
	_ cni.Networker = (*PTP)(nil)
	_ cni.Checker   = (*PTP)(nil)
)

// NewPTP returns the networker. It creates nothing on the host until the
// first Setup.
func NewPTP(cfg PTPConfig) (*PTP, error) {
	if !cfg.PodCIDR.Addr().Is4() {
		return nil, fmt.Errorf("ptp: pod CIDR %s: an IPv4 range is required", cfg.PodCIDR)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("ptp: state dir: %w", err)
	}
	ipam, err := cni.NewIPAM(cfg.StateDir, cfg.PodCIDR.Masked())
	if err != nil {
		return nil, fmt.Errorf("ptp: %w", err)
	}
	return &PTP{cfg: cfg, ipam: ipam}, nil
}

// HostLinkName is the host-side veth of a container's interface: the
// prefix and a hash, at most 15 bytes.
func HostLinkName(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + ifName))
	return HostLinkPrefix + hex.EncodeToString(sum[:])[:12]
}

func (p *PTP) hostHandle() (*netlink.Handle, error) {
	if p.cfg.NodeNetNS == "" {
		return netlink.NewHandle()
	}
	return netns.HandleAt(p.cfg.NodeNetNS)
}

// Setup creates a's veth pair straight into the pod's namespace, gives the
// pod end its /32 and default route, and routes the address to the host
// end. A retry starts over with the same address.
func (p *PTP) Setup(ctx context.Context, att *cni.Attachment) (*cni.Result, error) {
	a, err := att.Normalize(true)
	if err != nil {
		return nil, fmt.Errorf("ptp: setup: %w", err)
	}
	if err := netns.Check(a.NetNS); err != nil {
		return nil, fmt.Errorf("ptp: setup %s: %w", a.ContainerID, err)
	}
	if p.cfg.Forward {
		if err := p.enableForwarding(); err != nil {
			return nil, err
		}
	}
	ip, err := p.ipam.Allocate(ctx, a.ContainerID, a.IfName)
	if err != nil {
		return nil, fmt.Errorf("ptp: setup %s: %w", a.ContainerID, err)
	}
	res, err := p.attach(a, ip)
	if err != nil {
		rollback := errors.Join(p.deleteHostLink(a), p.ipam.Release(context.WithoutCancel(ctx), a.ContainerID, a.IfName))
		return nil, errors.Join(fmt.Errorf("ptp: setup %s: %w", a.ContainerID, err), rollback)
	}
	return res, nil
}

func (p *PTP) attach(a cni.Attachment, ip netip.Addr) (*cni.Result, error) {
	if err := p.deleteHostLink(a); err != nil { // a retry starts over
		return nil, err
	}
	host, err := p.hostHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink in the node namespace: %w", err)
	}
	defer host.Close()
	podNS, err := vnetns.GetFromPath(a.NetNS)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", a.NetNS, err)
	}
	defer podNS.Close()
	pod, err := netlink.NewHandleAt(podNS)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", a.NetNS, err)
	}
	defer pod.Close()

	hostName := HostLinkName(a.ContainerID, a.IfName)
	la := netlink.NewLinkAttrs()
	la.Name, la.Flags = hostName, net.FlagUp
	veth := &netlink.Veth{LinkAttrs: la, PeerName: a.IfName, PeerNamespace: netlink.NsFd(int(podNS))}
	if err := host.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("create veth %s/%s: %w", hostName, a.IfName, err)
	}
	hl, err := host.LinkByName(hostName)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", hostName, err)
	}
	if err := host.LinkSetUp(hl); err != nil {
		return nil, fmt.Errorf("set %s up: %w", hostName, err)
	}
	podAddr := netip.PrefixFrom(ip, 32)
	if err := host.RouteReplace(&netlink.Route{LinkIndex: hl.Attrs().Index, Dst: ipNet(podAddr), Scope: netlink.SCOPE_LINK}); err != nil {
		return nil, fmt.Errorf("route %s via %s: %w", podAddr, hostName, err)
	}

	eth, err := pod.LinkByName(a.IfName)
	if err != nil {
		return nil, fmt.Errorf("look up %s in %s: %w", a.IfName, a.NetNS, err)
	}
	if err := pod.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(podAddr)}); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("add %s to %s: %w", podAddr, a.IfName, err)
	}
	if err := pod.LinkSetUp(eth); err != nil {
		return nil, fmt.Errorf("set %s up: %w", a.IfName, err)
	}
	if lo, err := pod.LinkByName("lo"); err != nil {
		return nil, fmt.Errorf("look up lo in %s: %w", a.NetNS, err)
	} else if err := pod.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("set lo up: %w", err)
	}
	gw := netip.PrefixFrom(GatewayAddr, 32)
	if err := pod.NeighSet(&netlink.Neigh{LinkIndex: eth.Attrs().Index, IP: GatewayAddr.AsSlice(), HardwareAddr: hl.Attrs().HardwareAddr,
		State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}); err != nil {
		return nil, fmt.Errorf("neighbour %s: %w", GatewayAddr, err)
	}
	if err := pod.RouteReplace(&netlink.Route{LinkIndex: eth.Attrs().Index, Dst: ipNet(gw), Scope: netlink.SCOPE_LINK}); err != nil {
		return nil, fmt.Errorf("route to %s: %w", GatewayAddr, err)
	}
	def := netip.MustParsePrefix("0.0.0.0/0")
	if err := pod.RouteReplace(&netlink.Route{LinkIndex: eth.Attrs().Index, Dst: ipNet(def), Gw: GatewayAddr.AsSlice()}); err != nil {
		return nil, fmt.Errorf("default route via %s: %w", GatewayAddr, err)
	}
	return &cni.Result{
		Interfaces: []cni.Interface{{Name: hostName, MAC: hl.Attrs().HardwareAddr}, {Name: a.IfName, MAC: eth.Attrs().HardwareAddr, Sandbox: a.NetNS}},
		IPs:        []cni.IPConfig{{Address: podAddr, Gateway: GatewayAddr, Interface: 1}},
		Routes:     []cni.Route{{Dst: def, GW: GatewayAddr}},
	}, nil
}

// Teardown deletes the host end (the kernel deletes the pod end and the
// route with it) and releases the address; it needs no namespace and is
// idempotent.
func (p *PTP) Teardown(ctx context.Context, att *cni.Attachment) error {
	a, err := att.Normalize(false)
	if err != nil {
		return fmt.Errorf("ptp: teardown: %w", err)
	}
	if err := p.deleteHostLink(a); err != nil {
		return fmt.Errorf("ptp: teardown %s: %w", a.ContainerID, err)
	}
	if err := p.ipam.Release(ctx, a.ContainerID, a.IfName); err != nil {
		return fmt.Errorf("ptp: teardown %s: %w", a.ContainerID, err)
	}
	return nil
}

// Check verifies the host end and the pod's route still exist; anything
// missing wraps cni.ErrNotAttached.
func (p *PTP) Check(ctx context.Context, att *cni.Attachment) error {
	a, err := att.Normalize(true)
	if err != nil {
		return fmt.Errorf("ptp: check: %w", err)
	}
	ip, ok, err := p.ipam.Lookup(ctx, a.ContainerID, a.IfName)
	if err != nil {
		return fmt.Errorf("ptp: check %s: %w", a.ContainerID, err)
	}
	if !ok {
		return fmt.Errorf("ptp: check %s: no address: %w", a.ContainerID, cni.ErrNotAttached)
	}
	host, err := p.hostHandle()
	if err != nil {
		return err
	}
	defer host.Close()
	routes, err := host.RouteGet(ip.AsSlice())
	if err != nil || len(routes) == 0 {
		return fmt.Errorf("ptp: check %s: no route to %s: %w", a.ContainerID, ip, cni.ErrNotAttached)
	}
	l, err := host.LinkByIndex(routes[0].LinkIndex)
	if err != nil || l.Attrs().Name != HostLinkName(a.ContainerID, a.IfName) {
		return fmt.Errorf("ptp: check %s: %s is not routed to its veth: %w", a.ContainerID, ip, cni.ErrNotAttached)
	}
	pod, err := netns.HandleAt(a.NetNS)
	if err != nil {
		return fmt.Errorf("ptp: check %s: %w", a.ContainerID, err)
	}
	defer pod.Close()
	if _, err := pod.LinkByName(a.IfName); err != nil {
		return fmt.Errorf("ptp: check %s: %s missing in the pod: %w", a.ContainerID, a.IfName, cni.ErrNotAttached)
	}
	return nil
}

func (p *PTP) deleteHostLink(a cni.Attachment) error {
	host, err := p.hostHandle()
	if err != nil {
		return fmt.Errorf("netlink in the node namespace: %w", err)
	}
	defer host.Close()
	name := HostLinkName(a.ContainerID, a.IfName)
	l, err := host.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if err := host.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// enableForwarding sets net.ipv4.ip_forward in the node namespace.
func (p *PTP) enableForwarding() error {
	set := func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644)
	}
	if p.cfg.NodeNetNS != "" {
		if err := netns.Do(p.cfg.NodeNetNS, set); err != nil {
			return fmt.Errorf("ptp: ip_forward in %s: %w", p.cfg.NodeNetNS, err)
		}
		return nil
	}
	if err := set(); err != nil {
		return fmt.Errorf("ptp: ip_forward: %w", err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
