package cni

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

// Defaults of the built-in bridge networker (design.md §4).
const (
	DefaultBridgeName   = "podkit0"
	DefaultNetworkName  = "podkit"
	DefaultNFTableName  = "podkit"
	DefaultMTU          = 1500
	hostVethPrefix      = "veth"
	maxInterfaceNameLen = 15
)

// BridgeConfig holds what a Bridge cannot default.
type BridgeConfig struct {
	// PodCIDR is the node's pod subnet (Node.Spec.PodCIDR). The bridge holds
	// its gateway address; pods get the others.
	PodCIDR netip.Prefix
	// StateDir is the node's state root; IPAM keeps its allocations under
	// StateDir/networks/<network name>.
	StateDir string
}

// BridgeOption customises a Bridge; options reject bad values.
type BridgeOption func(*bridgeOptions) error

type bridgeOptions struct {
	bridgeName string
	network    string
	mtu        int
	hairpin    bool
	forward    bool
	masquerade bool
	table      string
	nodeNS     string
	logger     *slog.Logger
	ipamOpts   []IPAMOption
}

// WithBridgeName names the node bridge (default podkit0).
func WithBridgeName(name string) BridgeOption {
	return func(o *bridgeOptions) error {
		if name == "" || len(name) > maxInterfaceNameLen || strings.ContainsAny(name, "/: \t\n") {
			return fmt.Errorf("bridge name %q is not a valid interface name", name)
		}
		o.bridgeName = name
		return nil
	}
}

// WithNetworkName names the network, which names its IPAM directory
// (default podkit).
func WithNetworkName(name string) BridgeOption {
	return func(o *bridgeOptions) error {
		if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			return fmt.Errorf("network name %q is not usable as a directory name", name)
		}
		o.network = name
		return nil
	}
}

// WithMTU sets the MTU of the bridge and of both ends of every veth
// (default 1500).
func WithMTU(mtu int) BridgeOption {
	return func(o *bridgeOptions) error {
		if mtu < 68 || mtu > 65535 {
			return fmt.Errorf("MTU %d is outside 68..65535", mtu)
		}
		o.mtu = mtu
		return nil
	}
}

// WithHairpin turns hairpin mode on the host veths on or off (default on),
// so a pod can reach itself through a service address.
func WithHairpin(on bool) BridgeOption {
	return func(o *bridgeOptions) error { o.hairpin = on; return nil }
}

// WithIPForward makes the bridge enable IP forwarding in the node's
// namespace (default off). Cleanup restores the previous value.
func WithIPForward(on bool) BridgeOption {
	return func(o *bridgeOptions) error { o.forward = on; return nil }
}

// WithMasquerade makes the bridge install an nftables table that
// masquerades traffic from the pod CIDR leaving it (default off). table
// names the table; "" means podkit.
func WithMasquerade(on bool, table string) BridgeOption {
	return func(o *bridgeOptions) error {
		if table == "" {
			table = DefaultNFTableName
		}
		if len(table) > 255 || strings.ContainsAny(table, " \t\n") {
			return fmt.Errorf("nftables table name %q is not valid", table)
		}
		o.masquerade, o.table = on, table
		return nil
	}
}

// WithNodeNetNS makes the bridge live in the network namespace at path
// instead of the caller's (the default). Tests use it to build a whole node
// inside a throwaway namespace.
func WithNodeNetNS(path string) BridgeOption {
	return func(o *bridgeOptions) error {
		if err := netns.Check(path); err != nil {
			return err
		}
		o.nodeNS = path
		return nil
	}
}

// WithIPAMOptions passes options (gateway, range) to the address allocator.
func WithIPAMOptions(opts ...IPAMOption) BridgeOption {
	return func(o *bridgeOptions) error { o.ipamOpts = append(o.ipamOpts, opts...); return nil }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) BridgeOption {
	return func(o *bridgeOptions) error {
		if l == nil {
			return errors.New("nil logger")
		}
		o.logger = l
		return nil
	}
}

// Bridge is the built-in Networker: a Linux bridge holding the gateway of
// the node's PodCIDR, a veth pair per attachment with the pod end named
// IfName inside the pod's namespace and the host end on the bridge, an
// address from host-local style IPAM and a default route via the gateway.
// All kernel work is netlink from this process. It is safe for concurrent
// use; its state survives restarts because it lives in the kernel and in
// the IPAM directory.
type Bridge struct {
	o    bridgeOptions
	cidr netip.Prefix
	ipam *IPAM
	host *netlink.Handle
	masq *masquerade

	mu sync.Mutex // guards the node-level fields below
	// br is the bridge as ensureNode last made or found it; nil until
	// then, and again after Cleanup or once a Setup found it gone.
	br         netlink.Link
	prevFwd    string
	changedFwd bool
}

var (
	_ Networker        = (*Bridge)(nil)
	_ Checker          = (*Bridge)(nil)
	_ Cleaner          = (*Bridge)(nil)
	_ GarbageCollector = (*Bridge)(nil)
)

// NewBridge returns a bridge networker. It touches nothing in the kernel
// until the first Setup; call Close to release its netlink socket.
func NewBridge(cfg BridgeConfig, opts ...BridgeOption) (*Bridge, error) {
	o := bridgeOptions{
		bridgeName: DefaultBridgeName,
		network:    DefaultNetworkName,
		mtu:        DefaultMTU,
		hairpin:    true,
		table:      DefaultNFTableName,
		logger:     slog.Default(),
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
	}
	if !cfg.PodCIDR.IsValid() {
		return nil, errors.New("bridge: PodCIDR is required")
	}
	if cfg.StateDir == "" {
		return nil, errors.New("bridge: StateDir is required")
	}
	ipam, err := NewIPAM(filepath.Join(cfg.StateDir, "networks", o.network), cfg.PodCIDR, o.ipamOpts...)
	if err != nil {
		return nil, fmt.Errorf("bridge: %w", err)
	}
	var h *netlink.Handle
	if o.nodeNS == "" {
		h, err = netlink.NewHandle()
	} else {
		h, err = netns.HandleAt(o.nodeNS)
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: netlink: %w", err)
	}
	b := &Bridge{o: o, cidr: cfg.PodCIDR.Masked(), ipam: ipam, host: h}
	if o.masquerade {
		b.masq = &masquerade{table: o.table, cidr: b.cidr, nsPath: o.nodeNS}
	}
	return b, nil
}

// Close releases the netlink socket. It leaves the kernel state alone (see
// Cleanup).
func (b *Bridge) Close() error {
	b.host.Close()
	return nil
}

// IPAM returns the address allocator.
func (b *Bridge) IPAM() *IPAM { return b.ipam }

// Name returns the bridge's interface name.
func (b *Bridge) Name() string { return b.o.bridgeName }

// Gateway returns the bridge's address, the pods' default gateway.
func (b *Bridge) Gateway() netip.Addr { return b.ipam.Gateway() }

// HostVethName returns the name of the host end of a's veth pair: derived
// from the container ID and interface name, so Teardown finds it without
// any state.
func HostVethName(containerID, ifName string) string {
	sum := sha256.Sum256([]byte(containerID + "/" + ifName))
	return hostVethPrefix + hex.EncodeToString(sum[:])[:maxInterfaceNameLen-len(hostVethPrefix)]
}

// ensureNode creates or repairs the bridge, its address, forwarding and
// masquerading, once per process unless the bridge disappears. Once done it
// returns the bridge it made without asking the kernel again: a netlink
// round trip under b.mu on every Setup made a burst of Setups queue behind
// each other's veth creations (RTNL). A Setup that fails asks bridgeGone,
// which checks the kernel and has the next call rebuild the bridge.
func (b *Bridge) ensureNode(ctx context.Context) (netlink.Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.br != nil {
		return b.br, nil
	}
	br, err := b.ensureBridge()
	if err != nil {
		return nil, err
	}
	if b.o.forward {
		prev, err := swapSysctl(b.o.nodeNS, forwardingSysctl(b.cidr.Addr().Is4()), "1")
		if err != nil {
			return nil, fmt.Errorf("bridge: enable forwarding: %w", err)
		}
		if !b.changedFwd && prev != "1" {
			b.prevFwd, b.changedFwd = prev, true
		}
	}
	if b.masq != nil {
		if err := b.masq.ensure(); err != nil {
			return nil, fmt.Errorf("bridge: %w", err)
		}
	}
	b.br = br
	b.o.logger.Debug("bridge ready", "bridge", b.o.bridgeName, "gateway", b.Gateway(), "cidr", b.cidr)
	return br, nil
}

func (b *Bridge) ensureBridge() (netlink.Link, error) {
	name := b.o.bridgeName
	br, err := b.host.LinkByName(name)
	if isLinkNotFound(err) {
		la := netlink.NewLinkAttrs()
		la.Name = name
		la.MTU = b.o.mtu
		la.HardwareAddr = randomMAC()
		la.Flags = net.FlagUp
		if err := b.host.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil && !errors.Is(err, errExist) {
			return nil, fmt.Errorf("bridge: create %s: %w", name, err)
		}
		br, err = b.host.LinkByName(name)
	}
	if err != nil {
		return nil, fmt.Errorf("bridge: look up %s: %w", name, err)
	}
	if br.Type() != "bridge" {
		return nil, fmt.Errorf("bridge: %s exists and is a %s, not a bridge: %w", name, br.Type(), ErrExists)
	}
	gw := &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(b.Gateway(), b.cidr.Bits()))}
	if !b.cidr.Addr().Is4() {
		gw.Flags = unix.IFA_F_NODAD // usable at once, like the pods' addresses
	}
	if err := b.host.AddrAdd(br, gw); err != nil && !errors.Is(err, errExist) {
		return nil, fmt.Errorf("bridge: add %s to %s: %w", gw.IPNet, name, err)
	}
	if err := b.host.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("bridge: set %s up: %w", name, err)
	}
	return br, nil
}

// Cleanup removes the node-level state: the masquerade table, the bridge,
// and restores IP forwarding if this Bridge changed it. Call it after every
// attachment has been torn down. It is idempotent.
func (b *Bridge) Cleanup(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if b.masq != nil {
		errs = append(errs, b.masq.remove())
	}
	if br, err := b.host.LinkByName(b.o.bridgeName); err == nil {
		if br.Type() == "bridge" {
			if err := b.host.LinkDel(br); err != nil && !isLinkNotFound(err) {
				errs = append(errs, fmt.Errorf("bridge: delete %s: %w", b.o.bridgeName, err))
			}
		}
	} else if !isLinkNotFound(err) {
		errs = append(errs, fmt.Errorf("bridge: look up %s: %w", b.o.bridgeName, err))
	}
	if b.changedFwd {
		if _, err := swapSysctl(b.o.nodeNS, forwardingSysctl(b.cidr.Addr().Is4()), b.prevFwd); err != nil {
			errs = append(errs, fmt.Errorf("bridge: restore forwarding: %w", err))
		} else {
			b.changedFwd = false
		}
	}
	b.br = nil
	return errors.Join(errs...)
}

// bridgeGone says whether br, which a Setup used and failed with, is no
// longer the node's bridge (deleted or replaced behind this Bridge's back);
// then the next ensureNode rebuilds it.
func (b *Bridge) bridgeGone(br netlink.Link) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.br == nil || b.br.Attrs().Index != br.Attrs().Index {
		return true // already forgotten or rebuilt meanwhile
	}
	if l, err := b.host.LinkByIndex(br.Attrs().Index); err == nil && l.Attrs().Name == b.o.bridgeName {
		return false
	}
	b.br = nil
	return true
}

// randomMAC returns a random locally administered unicast address.
func randomMAC() net.HardwareAddr {
	m := make(net.HardwareAddr, 6)
	_, _ = rand.Read(m)
	m[0] = (m[0] | 0x02) &^ 0x01
	return m
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func isLinkNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return err != nil && errors.As(err, &nf)
}
