package podkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/cni/netns"
)

// serviceRoute is a node's local route of the service CIDR.
type serviceRoute struct {
	h *netlink.Handle
	r *netlink.Route
}

// addServiceRoute routes cidr locally in the network namespace at nsPath
// ("" the caller's): "local <cidr> dev lo table local metric <priority>".
func addServiceRoute(nsPath string, cidr netip.Prefix, priority int) (*serviceRoute, error) {
	return addNodeRoute(nsPath, "service route", func(lo netlink.Link) *netlink.Route {
		return &netlink.Route{
			LinkIndex: lo.Attrs().Index, Dst: ipNet(cidr),
			Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST,
			Priority: priority, Protocol: unix.RTPROT_STATIC,
		}
	})
}

// addGuardRoute makes cidr, the whole cluster's pod range, unreachable in
// the network namespace at nsPath unless a more specific route covers it:
// "unreachable <cidr> metric <priority>". Each node's bridge gives its own
// PodCIDR a connected route (and nodes sharing a host see each other's),
// so a pod address without a live node fails at once instead of following
// the default route off the machine. Like the service route it carries the
// node's own metric, so nodes sharing a host each own one and stopping one
// leaves the others guarded.
func addGuardRoute(nsPath string, cidr netip.Prefix, priority int) (*serviceRoute, error) {
	return addNodeRoute(nsPath, "cluster range guard route", func(netlink.Link) *netlink.Route {
		return &netlink.Route{
			Dst: ipNet(cidr), Type: unix.RTN_UNREACHABLE, Table: unix.RT_TABLE_MAIN,
			Priority: priority, Protocol: unix.RTPROT_STATIC,
		}
	})
}

func ipNet(p netip.Prefix) *net.IPNet {
	p = p.Masked()
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// addNodeRoute adds (or replaces) the route build returns in the network
// namespace at nsPath ("" the caller's).
func addNodeRoute(nsPath, what string, build func(lo netlink.Link) *netlink.Route) (*serviceRoute, error) {
	var h *netlink.Handle
	var err error
	if nsPath == "" {
		h, err = netlink.NewHandle()
	} else {
		h, err = netns.HandleAt(nsPath)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: netlink: %w", what, err)
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	r := build(lo)
	if err := h.RouteReplace(r); err != nil {
		h.Close()
		return nil, fmt.Errorf("%s: route %s: %w", what, r.Dst, err)
	}
	return &serviceRoute{h: h, r: r}, nil
}

// remove deletes the route; it is idempotent.
func (s *serviceRoute) remove() error {
	if s == nil || s.h == nil {
		return nil
	}
	defer func() { s.h.Close(); s.h = nil }()
	if err := s.h.RouteDel(s.r); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("service route: remove %s: %w", s.r.Dst, err)
	}
	return nil
}

// keepRouteLocalnet sets route_localnet on the node's bridge whenever the
// bridge exists (it appears with the first pod and is recreated if
// deleted) until ctx ends, then turns it off again.
func (s *nodeServices) keepRouteLocalnet(ctx context.Context) error {
	path := filepath.Join("/proc/sys/net/ipv4/conf", s.bridge, "route_localnet")
	set := func(v string) error {
		do := func() error {
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil // no bridge (yet, or any more)
			}
			if err != nil || strings.TrimSpace(string(b)) == v {
				return err
			}
			err = os.WriteFile(path, []byte(v), 0o644)
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if ns := s.n.cfg.NodeNetNS; ns != "" {
			return netns.Do(ns, do)
		}
		return do()
	}
	defer func() {
		if err := set("0"); err != nil {
			s.log.Warn("turning route_localnet off", "bridge", s.bridge, "err", err)
		}
	}()
	// Link notifications make the setting follow the bridge's creation
	// within milliseconds; the ticker covers a lost notification.
	updates := make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	defer close(done)
	opts := netlink.LinkSubscribeOptions{ErrorCallback: func(error) {}}
	if ns := s.n.cfg.NodeNetNS; ns != "" {
		h, err := vnetns.GetFromPath(ns)
		if err != nil {
			return fmt.Errorf("node namespace %s: %w", ns, err)
		}
		defer h.Close()
		opts.Namespace = &h
	}
	if err := netlink.LinkSubscribeWithOptions(updates, done, opts); err != nil {
		s.log.Warn("link notifications unavailable; polling the bridge", "err", err)
	}
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		if err := set("1"); err != nil {
			s.log.Warn("setting route_localnet", "bridge", s.bridge, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case u, ok := <-updates:
			if !ok {
				updates = nil
				continue
			}
			if u.Attrs().Name != s.bridge {
				continue
			}
		}
	}
}
