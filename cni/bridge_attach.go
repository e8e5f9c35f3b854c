package cni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

const errExist = unix.EEXIST

// Setup attaches a's namespace to the bridge: allocate an address, create
// the veth pair straight into the namespace, address it, bring it and lo up
// and route by default via the gateway. On failure everything it created is
// removed again and the address released.
func (b *Bridge) Setup(ctx context.Context, att *Attachment) (*Result, error) {
	a, err := att.Normalize(true)
	if err != nil {
		return nil, fmt.Errorf("bridge: setup: %w", err)
	}
	if err := netns.Check(a.NetNS); err != nil {
		return nil, fmt.Errorf("bridge: setup %s: %w", a.ContainerID, err)
	}
	br, err := b.ensureNode(ctx)
	if err != nil {
		return nil, err
	}
	ip, err := b.ipam.Allocate(ctx, a.ContainerID, a.IfName)
	if err != nil {
		return nil, fmt.Errorf("bridge: setup %s: %w", a.ContainerID, err)
	}
	res, err := b.attach(ctx, a, br, ip)
	if err != nil && ctx.Err() == nil && b.bridgeGone(br) {
		// The bridge vanished since ensureNode last made it: rebuild it
		// and attach once more (attach starts over by itself).
		if br, err = b.ensureNode(ctx); err == nil {
			res, err = b.attach(ctx, a, br, ip)
		}
	}
	if err != nil {
		// Deleting the host end removes the pod end too.
		rollback := errors.Join(b.deleteHostVeth(a), b.ipam.Release(context.WithoutCancel(ctx), a.ContainerID, a.IfName))
		if rollback != nil {
			b.o.logger.Warn("bridge: rollback after failed setup", "container", a.ContainerID, "err", rollback)
		}
		return nil, fmt.Errorf("bridge: setup %s: %w", a.ContainerID, err)
	}
	b.o.logger.Debug("bridge: attached", "container", a.ContainerID, "pod", a.Pod, "ip", ip, "veth", res.Interfaces[0].Name)
	return res, nil
}

func (b *Bridge) attach(ctx context.Context, a Attachment, br netlink.Link, ip netip.Addr) (*Result, error) {
	podNS, err := vnetns.GetFromPath(a.NetNS)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", a.NetNS, err)
	}
	defer podNS.Close()
	ph, err := netlink.NewHandleAt(podNS)
	if err != nil {
		return nil, fmt.Errorf("netlink in %s: %w", a.NetNS, err)
	}
	defer ph.Close()

	// A retried Setup finds its earlier pair: start over. Deleting the
	// host end takes the pod end along; an interface that stays is not
	// this networker's. (Only then is the host end looked up: the common
	// case costs no extra round trip on the node's netlink socket.)
	if _, err := ph.LinkByName(a.IfName); err == nil {
		if err := b.deleteHostVeth(a); err != nil {
			return nil, err
		}
		if l, err := ph.LinkByName(a.IfName); err == nil {
			return nil, fmt.Errorf("interface %s in %s is a %s this networker did not create: %w", a.IfName, a.NetNS, l.Type(), ErrExists)
		}
	} else if !isLinkNotFound(err) {
		return nil, fmt.Errorf("look up %s in %s: %w", a.IfName, a.NetNS, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	hostName := HostVethName(a.ContainerID, a.IfName)
	hostMAC, podMAC := randomMAC(), randomMAC()
	la := netlink.NewLinkAttrs()
	la.Name = hostName
	la.MTU = b.o.mtu
	la.HardwareAddr = hostMAC
	la.MasterIndex = br.Attrs().Index
	la.Flags = net.FlagUp
	veth := &netlink.Veth{
		LinkAttrs:        la,
		PeerName:         a.IfName,
		PeerHardwareAddr: podMAC,
		PeerNamespace:    netlink.NsFd(int(podNS)),
	}
	err = b.host.LinkAdd(veth)
	if errors.Is(err, errExist) {
		// A leftover host end whose pod end is gone elsewhere.
		if err := b.deleteHostVeth(a); err != nil {
			return nil, err
		}
		err = b.host.LinkAdd(veth)
	}
	if err != nil {
		return nil, fmt.Errorf("create veth %s/%s: %w", hostName, a.IfName, err)
	}
	if b.o.hairpin {
		if err := b.host.LinkSetHairpin(veth, true); err != nil {
			return nil, fmt.Errorf("hairpin on %s: %w", hostName, err)
		}
	}

	eth, err := ph.LinkByName(a.IfName)
	if err != nil {
		return nil, fmt.Errorf("look up %s in %s: %w", a.IfName, a.NetNS, err)
	}
	addr := &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(ip, b.cidr.Bits()))}
	if !ip.Is4() {
		addr.Flags = unix.IFA_F_NODAD
	}
	if err := ph.AddrAdd(eth, addr); err != nil && !errors.Is(err, errExist) {
		return nil, fmt.Errorf("add %s to %s: %w", addr.IPNet, a.IfName, err)
	}
	if err := ph.LinkSetUp(eth); err != nil {
		return nil, fmt.Errorf("set %s up: %w", a.IfName, err)
	}
	if lo, err := ph.LinkByName("lo"); err != nil {
		return nil, fmt.Errorf("look up lo in %s: %w", a.NetNS, err)
	} else if err := ph.LinkSetUp(lo); err != nil {
		return nil, fmt.Errorf("set lo up: %w", err)
	}
	gw := b.Gateway()
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: gw.AsSlice(), Dst: prefixIPNet(netip.PrefixFrom(zeroAddr(ip), 0))}
	if err := ph.RouteReplace(route); err != nil {
		return nil, fmt.Errorf("default route via %s: %w", gw, err)
	}
	return &Result{
		Interfaces: []Interface{
			{Name: hostName, MAC: hostMAC},
			{Name: a.IfName, MAC: podMAC, Sandbox: a.NetNS},
		},
		IPs:    []IPConfig{{Address: netip.PrefixFrom(ip, b.cidr.Bits()), Gateway: gw, Interface: 1}},
		Routes: []Route{{Dst: netip.PrefixFrom(zeroAddr(ip), 0), GW: gw}},
	}, nil
}

// Teardown deletes the host end of a's veth pair (the kernel deletes the pod
// end with it, and both vanish with the namespace anyway) and releases the
// address. It never needs the namespace, so it works after the sandbox is
// gone; doing it twice is a no-op.
func (b *Bridge) Teardown(ctx context.Context, att *Attachment) error {
	a, err := att.Normalize(false)
	if err != nil {
		return fmt.Errorf("bridge: teardown: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := b.deleteHostVeth(a); err != nil {
		return fmt.Errorf("bridge: teardown %s: %w", a.ContainerID, err)
	}
	if err := b.ipam.Release(ctx, a.ContainerID, a.IfName); err != nil {
		return fmt.Errorf("bridge: teardown %s: %w", a.ContainerID, err)
	}
	b.o.logger.Debug("bridge: detached", "container", a.ContainerID, "pod", a.Pod)
	return nil
}

func (b *Bridge) deleteHostVeth(a Attachment) error {
	name := HostVethName(a.ContainerID, a.IfName)
	l, err := b.host.LinkByName(name)
	if isLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if err := b.host.LinkDel(l); err != nil && !isLinkNotFound(err) && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}

// Check verifies that a is attached as Setup left it: an address held in
// IPAM, the host veth up on the bridge, the pod interface up with that
// address and the default route via the gateway. Mismatches wrap
// ErrNotAttached.
func (b *Bridge) Check(ctx context.Context, att *Attachment) error {
	a, err := att.Normalize(true)
	if err != nil {
		return fmt.Errorf("bridge: check: %w", err)
	}
	if err := b.check(ctx, a); err != nil {
		return fmt.Errorf("bridge: check %s: %w", a.ContainerID, err)
	}
	return nil
}

func (b *Bridge) check(ctx context.Context, a Attachment) error {
	ip, ok, err := b.ipam.Lookup(ctx, a.ContainerID, a.IfName)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no address allocated: %w", ErrNotAttached)
	}
	hostName := HostVethName(a.ContainerID, a.IfName)
	hv, err := b.host.LinkByName(hostName)
	if isLinkNotFound(err) {
		return fmt.Errorf("host veth %s is missing: %w", hostName, ErrNotAttached)
	}
	if err != nil {
		return err
	}
	br, err := b.host.LinkByName(b.o.bridgeName)
	if err != nil {
		return fmt.Errorf("bridge %s: %v: %w", b.o.bridgeName, err, ErrNotAttached)
	}
	if hv.Attrs().MasterIndex != br.Attrs().Index {
		return fmt.Errorf("host veth %s is not on bridge %s: %w", hostName, b.o.bridgeName, ErrNotAttached)
	}
	if hv.Attrs().Flags&net.FlagUp == 0 {
		return fmt.Errorf("host veth %s is down: %w", hostName, ErrNotAttached)
	}
	if err := netns.Check(a.NetNS); err != nil {
		return fmt.Errorf("%v: %w", err, ErrNotAttached)
	}
	ph, err := netns.HandleAt(a.NetNS)
	if err != nil {
		return err
	}
	defer ph.Close()
	eth, err := ph.LinkByName(a.IfName)
	if isLinkNotFound(err) {
		return fmt.Errorf("%s is missing in %s: %w", a.IfName, a.NetNS, ErrNotAttached)
	}
	if err != nil {
		return err
	}
	if eth.Attrs().Flags&net.FlagUp == 0 {
		return fmt.Errorf("%s is down: %w", a.IfName, ErrNotAttached)
	}
	addrs, err := ph.AddrList(eth, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return err
	}
	want := netip.PrefixFrom(ip, b.cidr.Bits())
	found := false
	for _, ad := range addrs {
		if got, ok := ipNetPrefix(ad.IPNet); ok && got == want {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s lacks address %s: %w", a.IfName, want, ErrNotAttached)
	}
	routes, err := ph.RouteList(eth, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return err
	}
	gw := b.Gateway()
	for _, r := range routes {
		isDefault := r.Dst == nil || (r.Dst.IP.IsUnspecified() && maskBits(r.Dst) == 0)
		if isDefault && r.Gw != nil {
			if g, ok := netip.AddrFromSlice(r.Gw); ok && g.Unmap() == gw {
				return nil
			}
		}
	}
	return fmt.Errorf("no default route via %s on %s: %w", gw, a.IfName, ErrNotAttached)
}

func zeroAddr(ip netip.Addr) netip.Addr {
	if ip.Is4() {
		return netip.IPv4Unspecified()
	}
	return netip.IPv6Unspecified()
}

func ipNetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a.Unmap(), maskBits(n)), true
}

func maskBits(n *net.IPNet) int {
	ones, _ := n.Mask.Size()
	return ones
}

// GC tears down every attachment IPAM knows of that is not in keep: its
// host veth is deleted (taking the pod end along) and its address released.
func (b *Bridge) GC(ctx context.Context, keep []*Attachment) error {
	valid := make(map[[2]string]bool, len(keep))
	for _, k := range keep {
		a, err := k.Normalize(false)
		if err != nil {
			return fmt.Errorf("bridge: gc: %w", err)
		}
		valid[[2]string{a.ContainerID, a.IfName}] = true
	}
	allocs, err := b.ipam.Allocations(ctx)
	if err != nil {
		return fmt.Errorf("bridge: gc: %w", err)
	}
	var errs []error
	for _, al := range allocs {
		ifName := al.IfName
		if ifName == "" {
			ifName = DefaultIfName
		}
		if valid[[2]string{al.ContainerID, ifName}] {
			continue
		}
		if err := b.Teardown(ctx, &Attachment{ContainerID: al.ContainerID, IfName: ifName}); err != nil {
			errs = append(errs, err)
			continue
		}
		b.o.logger.Info("bridge: collected stale attachment", "container", al.ContainerID, "ip", al.IP)
	}
	return errors.Join(errs...)
}
