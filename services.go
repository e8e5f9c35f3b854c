package podkit

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/cni/netns"
	"github.com/podkit/podkit/dns"
	"github.com/podkit/podkit/proxy"
)

// Service networking on a node: the last step of the birth sequence (16),
// where a Ready pod starts receiving its Services' traffic.
//
// Every node runs, next to its kubelet:
//
//   - the service proxy (package proxy) in its own nftables table
//     ("podkit-proxy-<node>"), so ClusterIPs work from the node's pods and
//     from the host;
//   - a local route for the whole service CIDR (type local in the local
//     table, like an AnyIP range): the host's own packets to a ClusterIP
//     are routed before the output hook can DNAT them, so without a route
//     they would follow the default route off the machine; with it an
//     unprogrammed ClusterIP answers at once (reset or port unreachable)
//     and nothing of the service range ever leaves the host;
//   - an unreachable route for the whole cluster pod range (ClusterCIDR),
//     less specific than every node bridge's connected route: a pod
//     address no node on this host owns fails at once instead of following
//     the default route (a stand-alone `podkit kubelet` has no Cluster to
//     install it);
//   - the cluster DNS (package dns), node-local: the server listens on the
//     pod bridge's gateway (a free port, IP_FREEBIND since the bridge only
//     appears with the first pod) and publishes itself as an endpoint of
//     the `kube-dns` Service in kube-system — clusterIP the cluster DNS
//     address the kubelet writes into pods' resolv.conf (10.96.0.10), no
//     selector, internalTrafficPolicy Local, one EndpointSlice per node
//     ("kube-dns-<node>", nodeName set, owned by the Node object). Each
//     node's proxy therefore DNATs 10.96.0.10:53 to its own node's server.
//
// Why node-local DNS rather than one server run by podkit.Cluster: the
// same code then serves `podkit up` (N nodes in one process) and a
// stand-alone `podkit kubelet` joining any control plane, with no process
// or machine other than the pod's own node on the lookup path (the
// NodeLocal DNSCache shape, without its link-local address, which needs a
// dummy interface); the gateway is the one host address every pod of the
// node reaches by construction, and listening there keeps the resolver off
// the host's other networks. The servers share the proxy's informers, so
// DNS adds no watch. A stale slice of a node that went away is harmless:
// with policy Local only that node's proxy would use it, and the garbage
// collector removes it with the Node.
//
// The `kubernetes` Service names the API server's advertise address. When
// that is the loopback (the API server of `podkit up` listens on
// 127.0.0.1), the node sets route_localnet on its bridge so the DNAT to
// 127.0.0.1 is not dropped as martian; the proxy's input chain drops every
// other packet for 127.0.0.0/8 arriving from outside lo (kube-proxy's
// guard against CVE-2020-8558). route_localnet is reset when the node's
// services stop.

// Defaults of ServicesConfig.
var (
	// DefaultServiceCIDR is the Service ClusterIP range (kube-apiserver's
	// --service-cluster-ip-range default in kind and kubeadm).
	DefaultServiceCIDR = netip.MustParsePrefix("10.96.0.0/12")
	// DefaultClusterCIDR is the pod range of the whole cluster.
	DefaultClusterCIDR = netip.MustParsePrefix("10.244.0.0/16")
)

// DNSServiceName is the cluster DNS Service in kube-system, named as
// kubeadm names CoreDNS's so tools that look for it find it.
const DNSServiceName = "kube-dns"

// ServicesConfig configures a node's share of Service networking: the
// proxy, the local route of the service range and the node-local cluster
// DNS (published behind the ClusterDNS address).
type ServicesConfig struct {
	// Disabled runs none of it (bring your own proxy and DNS).
	Disabled bool
	// Client reads Services and EndpointSlices (proxy, DNS) and publishes
	// the `kube-dns` Service and the node's slice of it; default the
	// node's Client. Under RBAC a node's identity may do both through the
	// bootstrap binding podkit:node-services (system:node-proxier for the
	// group system:nodes, plus kube-dns publishing in kube-system);
	// `podkit kubelet --services-kubeconfig` names other credentials.
	Client kubernetes.Interface
	// ServiceCIDR is routed locally (default DefaultServiceCIDR); it must
	// match the API server's service range.
	ServiceCIDR netip.Prefix
	// ClusterCIDR is the pod range of the whole cluster: service traffic
	// from outside it is masqueraded (default DefaultClusterCIDR).
	ClusterCIDR netip.Prefix
	// DNSUpstreams are "ip:port" resolvers for names outside the cluster
	// domain; empty refuses them (commands default to the host's
	// resolv.conf).
	DNSUpstreams []string
	// NoDNS runs the proxy but not the DNS server.
	NoDNS bool
	// ProxyTable names the proxy's nftables table (default
	// "podkit-proxy-<node>").
	ProxyTable string
	// MinSyncPeriod is the proxy's (default 0: sync at once).
	MinSyncPeriod time.Duration
}

// nodeServices is what a node runs for Services.
type nodeServices struct {
	log     *slog.Logger
	n       *Node
	cfg     ServicesConfig
	bridge  string     // "" with a custom network
	gateway netip.Addr // the DNS server's address; invalid without DNS
	route   *serviceRoute
	guard   *serviceRoute // the cluster range's unreachable route
	proxy   *proxy.Proxier
	dns     *dns.Server
	factory informers.SharedInformerFactory

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startServices starts the node's Service networking once its network is
// wired, reporting a failure on errc. The returned stop (never nil) ends
// it and waits until the proxy's table, the route and route_localnet are
// gone; Run defers it.
func (n *Node) startServices(ctx context.Context, errc chan<- error) (stop func()) {
	cfg := n.cfg.Services
	if cfg.Disabled {
		return func() {}
	}
	s, err := n.newServices(ctx, cfg)
	if err != nil {
		errc <- fmt.Errorf("node %s: services: %w", n.cfg.Name, err)
		return func() {}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	run := func(name string, f func(context.Context) error) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("node %s: %s: %w", n.cfg.Name, name, err)
			}
		}()
	}
	run("proxy", s.proxy.Run)
	if s.dns != nil {
		run("dns", s.dns.Run)
		run("dns endpoint", s.publishDNS)
	}
	if s.bridge != "" {
		run("route_localnet", s.keepRouteLocalnet)
	}
	n.log.Info("services running", "serviceCIDR", s.cfg.ServiceCIDR, "proxyTable", s.cfg.ProxyTable, "dns", s.dnsAddr())
	return func() {
		s.cancel()
		s.wg.Wait()
		if err := s.route.remove(); err != nil {
			n.log.Error("removing the service route", "err", err)
		}
		if err := s.guard.remove(); err != nil {
			n.log.Error("removing the cluster range guard route", "err", err)
		}
	}
}

func (n *Node) newServices(ctx context.Context, cfg ServicesConfig) (_ *nodeServices, retErr error) {
	if !cfg.ServiceCIDR.IsValid() {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	if !cfg.ClusterCIDR.IsValid() {
		cfg.ClusterCIDR = DefaultClusterCIDR
	}
	if cfg.Client == nil {
		cfg.Client = n.cfg.Client
	}
	if cfg.ProxyTable == "" {
		cfg.ProxyTable = "podkit-proxy-" + n.cfg.Name
	}
	s := &nodeServices{log: n.log, n: n, cfg: cfg}
	reg := n.cfg.Registerer
	if reg != nil {
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"node": n.cfg.Name}, reg)
	}
	route, err := addServiceRoute(n.cfg.NodeNetNS, cfg.ServiceCIDR, routePriority(n.cfg.Name))
	if err != nil {
		return nil, err
	}
	s.route = route
	defer func() {
		if retErr != nil {
			_ = route.remove()
		}
	}()
	guard, err := addGuardRoute(n.cfg.NodeNetNS, cfg.ClusterCIDR, routePriority(n.cfg.Name))
	if err != nil {
		return nil, err
	}
	s.guard = guard
	defer func() {
		if retErr != nil {
			_ = guard.remove()
		}
	}()
	s.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	if n.bridge != nil {
		s.bridge = n.bridge.Name()
		if !cfg.NoDNS && len(n.cfg.ClusterDNS) > 0 {
			s.gateway = n.bridge.Gateway()
			if s.dns, err = s.newDNS(ctx, reg); err != nil {
				return nil, err
			}
		}
	}
	s.proxy, err = proxy.New(proxy.Config{
		Client: cfg.Client, Informers: s.factory, NodeName: n.cfg.Name, Table: cfg.ProxyTable,
		ClusterCIDR: cfg.ClusterCIDR, NetNS: n.cfg.NodeNetNS, MinSyncPeriod: cfg.MinSyncPeriod,
		Logger: n.log.With("component", "proxy"), Registerer: reg,
	})
	if err != nil {
		if s.dns != nil {
			_ = s.dns.Close()
		}
		return nil, fmt.Errorf("proxy: %w", err)
	}
	return s, nil
}

// newDNS opens the DNS server's sockets on the gateway (in the node's
// namespace) and builds it over the shared informers; it must run before
// anything starts the factory, since the server adds indexers.
func (s *nodeServices) newDNS(ctx context.Context, reg prometheus.Registerer) (*dns.Server, error) {
	addr := net.JoinHostPort(s.gateway.String(), "0")
	listen := func() (*dns.Sockets, error) { return dns.ListenFreebind(ctx, addr) }
	var socks *dns.Sockets
	var err error
	if ns := s.n.cfg.NodeNetNS; ns != "" {
		err = netns.Do(ns, func() error { var e error; socks, e = listen(); return e })
	} else {
		socks, err = listen()
	}
	if err != nil {
		return nil, err
	}
	srv, err := dns.New(dns.Config{
		Informers: s.factory, Domain: s.n.cfg.ClusterDomain, Upstreams: s.cfg.DNSUpstreams, Sockets: socks,
		Logger: s.log.With("component", "dns"), Registerer: reg,
	})
	if err != nil {
		_ = socks.Close()
		return nil, fmt.Errorf("dns: %w", err)
	}
	return srv, nil
}

func (s *nodeServices) dnsAddr() string {
	if s.dns == nil {
		return ""
	}
	return s.dns.Addr().String()
}

// routePriority is the metric of the node's service route: derived from
// the node's name, so nodes sharing a host (podkit up --nodes 2) each own
// one route and a restarted node replaces its own.
func routePriority(node string) int {
	h := fnv.New32a()
	h.Write([]byte(node))
	return 1000 + int(h.Sum32()%60000)
}
