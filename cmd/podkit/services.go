package main

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/dns"
)

// serviceFlags are the Service networking flags of podkit kubelet and
// podkit up: the service range, the pod range (kubelet only: up has its
// own --cluster-cidr) and the cluster DNS's upstreams.
type serviceFlags struct {
	serviceCIDR, clusterCIDR, resolvConf string
	kubeconfig                           string
	upstreams                            []string
	enabled                              bool
}

func (s *serviceFlags) register(f *pflag.FlagSet, node bool) {
	f.StringVar(&s.serviceCIDR, "service-cidr", podkit.DefaultServiceCIDR.String(), "the Services' ClusterIP range (as the API server's), routed locally")
	f.StringSliceVar(&s.upstreams, "dns-upstream", nil, `resolvers ("ip:port") the cluster DNS forwards other names to; "none" refuses them (default: the nameservers of --resolv-conf)`)
	f.StringVar(&s.resolvConf, "resolv-conf", "/etc/resolv.conf", "resolv.conf whose nameservers are the default DNS upstreams")
	if node {
		f.StringVar(&s.clusterCIDR, "cluster-cidr", podkit.DefaultClusterCIDR.String(), "the pod range of the whole cluster (service traffic from outside it is masqueraded)")
		f.BoolVar(&s.enabled, "services", true, "run the service proxy and the node-local cluster DNS")
		f.StringVar(&s.kubeconfig, "services-kubeconfig", "", "kubeconfig for the proxy and DNS, which read Services and EndpointSlices and publish kube-system/kube-dns and the node's slice of it (default: the kubelet's credentials)")
	}
}

// config turns the flags into a node's ServicesConfig.
func (s *serviceFlags) config() (podkit.ServicesConfig, error) {
	var c podkit.ServicesConfig
	c.Disabled = !s.enabled
	var err error
	if c.ServiceCIDR, err = netip.ParsePrefix(s.serviceCIDR); err != nil {
		return c, fmt.Errorf("--service-cidr: %w", err)
	}
	if s.clusterCIDR != "" {
		if c.ClusterCIDR, err = netip.ParsePrefix(s.clusterCIDR); err != nil {
			return c, fmt.Errorf("--cluster-cidr: %w", err)
		}
	}
	if s.kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
		if err != nil {
			return c, fmt.Errorf("--services-kubeconfig: %w", err)
		}
		if c.Client, err = kubernetes.NewForConfig(rc); err != nil {
			return c, fmt.Errorf("--services-kubeconfig: %w", err)
		}
	}
	switch {
	case len(s.upstreams) == 1 && s.upstreams[0] == "none":
	case len(s.upstreams) > 0:
		c.DNSUpstreams = s.upstreams
	default:
		f, err := os.Open(s.resolvConf)
		if err != nil {
			return c, fmt.Errorf("--resolv-conf: %w", err)
		}
		defer f.Close()
		if c.DNSUpstreams, err = dns.HostUpstreams(f); err != nil {
			return c, fmt.Errorf("--resolv-conf %s: %w", s.resolvConf, err)
		}
	}
	return c, nil
}
