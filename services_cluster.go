package podkit

import (
	"errors"
	"net/netip"
)

// DNSAddr is the cluster DNS address of a service range: its tenth
// address (10.96.0.10 in 10.96.0.0/12), the one the API server keeps free
// for it and the kubelet writes into pods' resolv.conf.
func DNSAddr(serviceCIDR netip.Prefix) netip.Addr {
	a := serviceCIDR.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	return a
}

// nodeServices gives a node of the cluster the cluster's service range,
// pod range and DNS settings (before ClusterConfig.Node may change them).
// The proxy and DNS use the node's own client and identity
// (system:node:<name>), which RBAC's podkit:node-services grants exactly
// what they need, as for a stand-alone `podkit kubelet`.
func (c *Cluster) nodeServices(nc *NodeConfig) {
	nc.ClusterDNS = []netip.Addr{DNSAddr(c.cfg.ServiceCIDR)}
	nc.Services = ServicesConfig{
		ServiceCIDR: c.cfg.ServiceCIDR, ClusterCIDR: c.cfg.ClusterCIDR, DNSUpstreams: c.cfg.DNSUpstreams,
	}
}

// guardRoutes makes the pod and service ranges unroutable on the host
// unless a more specific route covers them (a node's bridge) or a node's
// local service route takes precedence (the local table is looked up
// first), so neither ever falls through to the default route.
func guardRoutes(cluster, service netip.Prefix) (remove func() error, err error) {
	rmCluster, err := guardRoute(cluster)
	if err != nil {
		return nil, err
	}
	rmService, err := guardRoute(service)
	if err != nil {
		_ = rmCluster()
		return nil, err
	}
	return func() error { return errors.Join(rmService(), rmCluster()) }, nil
}
