package plugin

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/podkit/podkit/cni"
)

// convertResult turns a plugin result of any supported version into
// cni.Result.
func convertResult(r types.Result) (*cni.Result, error) {
	cur, err := types100.NewResultFromResult(r)
	if err != nil {
		return nil, fmt.Errorf("convert CNI result: %w", err)
	}
	out := &cni.Result{
		DNS: cni.DNS{
			Nameservers: cur.DNS.Nameservers,
			Domain:      cur.DNS.Domain,
			Search:      cur.DNS.Search,
			Options:     cur.DNS.Options,
		},
	}
	for _, i := range cur.Interfaces {
		if i == nil {
			continue
		}
		iface := cni.Interface{Name: i.Name, Sandbox: i.Sandbox}
		if i.Mac != "" {
			mac, err := net.ParseMAC(i.Mac)
			if err != nil {
				return nil, fmt.Errorf("interface %s: bad MAC %q: %w", i.Name, i.Mac, err)
			}
			iface.MAC = mac
		}
		out.Interfaces = append(out.Interfaces, iface)
	}
	for _, ip := range cur.IPs {
		if ip == nil {
			continue
		}
		p, ok := toPrefix(ip.Address)
		if !ok {
			return nil, fmt.Errorf("bad address %v in CNI result", ip.Address)
		}
		c := cni.IPConfig{Address: p, Interface: -1}
		if ip.Interface != nil {
			c.Interface = *ip.Interface
		}
		if ip.Gateway != nil {
			gw, ok := netip.AddrFromSlice(ip.Gateway)
			if !ok {
				return nil, fmt.Errorf("bad gateway %v in CNI result", ip.Gateway)
			}
			c.Gateway = gw.Unmap()
		}
		out.IPs = append(out.IPs, c)
	}
	for _, rt := range cur.Routes {
		if rt == nil {
			continue
		}
		dst, ok := toPrefix(rt.Dst)
		if !ok {
			return nil, fmt.Errorf("bad route destination %v in CNI result", rt.Dst)
		}
		route := cni.Route{Dst: dst}
		if rt.GW != nil {
			gw, ok := netip.AddrFromSlice(rt.GW)
			if !ok {
				return nil, fmt.Errorf("bad route gateway %v in CNI result", rt.GW)
			}
			route.GW = gw.Unmap()
		}
		out.Routes = append(out.Routes, route)
	}
	return out, nil
}

func toPrefix(n net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, bits := n.Mask.Size()
	if bits == 0 {
		ones = a.BitLen() // no mask: a host address
	}
	return netip.PrefixFrom(a, ones), true
}
