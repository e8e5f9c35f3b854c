package pki

import (
	"crypto"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names under the cluster's PKI directory, as kubeadm names them.
const (
	CACertFile            = "ca.crt"
	CAKeyFile             = "ca.key"
	ServingCertFile       = "apiserver.crt"
	ServingKeyFile        = "apiserver.key"
	AdminCertFile         = "admin.crt"
	AdminKeyFile          = "admin.key"
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
	ServiceAccountKeyFile = "sa.key"
	ServiceAccountPubFile = "sa.pub"
	// Per node, under nodes/<name>/.
	NodeClientCertFile  = "kubelet-client.crt"
	NodeClientKeyFile   = "kubelet-client.key"
	NodeServingCertFile = "kubelet.crt"
	NodeServingKeyFile  = "kubelet.key"
)

// Identities the certificates carry.
const (
	CACommonName      = "kubernetes"
	ServingCommonName = "kube-apiserver"
	AdminUser         = "kubernetes-admin"
	// KubeletClientUser is the API server's name towards kubelets.
	KubeletClientUser = "kube-apiserver-kubelet-client"
	// MastersGroup grants everything under RBAC.
	MastersGroup = "system:masters"
	// NodesGroup and NodeUserPrefix make a kubelet's identity.
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// DefaultServiceIP is the `kubernetes` service's address in the default
// service range 10.96.0.0/12.
var DefaultServiceIP = net.IPv4(10, 96, 0, 1)

// ClusterOptions configure EnsureCluster.
type ClusterOptions struct {
	// Hosts are further names and addresses the API server is reached
	// at (the advertise and bind addresses); ServingHosts adds the rest.
	Hosts []string
	// ServiceIP is the `kubernetes` service's address (default
	// DefaultServiceIP).
	ServiceIP net.IP
	// ClusterDomain defaults to cluster.local.
	ClusterDomain string
	// Now defaults to time.Now.
	Now func() time.Time
}

// Cluster is the cluster's PKI, as kept in Dir.
type Cluster struct {
	Dir string
	CA  *CA
	// Serving is the API server's serving certificate.
	Serving *KeyPair
	// Admin is kubernetes-admin in system:masters: the kubeconfig's user.
	Admin *KeyPair
	// KubeletClient is how the API server authenticates to kubelets
	// (pods/log): kube-apiserver-kubelet-client in system:masters.
	KubeletClient *KeyPair
	// ServiceAccountKey signs service-account tokens.
	ServiceAccountKey crypto.Signer
}

// NodeCerts are one kubelet's certificates.
type NodeCerts struct {
	Dir string
	// Client is system:node:<name> in system:nodes.
	Client *KeyPair
	// Serving is the kubelet server's certificate.
	Serving *KeyPair
}

// EnsureCluster loads the cluster's PKI from dir, creating what is
// missing and renewing what no longer fits (see CA.Covers).
func EnsureCluster(dir string, opts ClusterOptions) (*Cluster, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	ca, err := LoadOrCreateCA(p(CACertFile), p(CAKeyFile), CACommonName, opts.Now)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, CA: ca}
	dns, ips := SplitHosts(ServingHosts(opts))
	if c.Serving, err = ca.LoadOrIssue(p(ServingCertFile), p(ServingKeyFile),
		CertSpec{CommonName: ServingCommonName, DNSNames: dns, IPs: ips, Server: true}); err != nil {
		return nil, err
	}
	if c.Admin, err = ca.LoadOrIssue(p(AdminCertFile), p(AdminKeyFile),
		CertSpec{CommonName: AdminUser, Organization: []string{MastersGroup}, Client: true}); err != nil {
		return nil, err
	}
	if c.KubeletClient, err = ca.LoadOrIssue(p(KubeletClientCertFile), p(KubeletClientKeyFile),
		CertSpec{CommonName: KubeletClientUser, Organization: []string{MastersGroup}, Client: true}); err != nil {
		return nil, err
	}
	if c.ServiceAccountKey, err = LoadOrCreateSigningKey(p(ServiceAccountKeyFile), p(ServiceAccountPubFile)); err != nil {
		return nil, err
	}
	return c, nil
}

// OpenCA opens an existing cluster PKI for issuing node certificates
// (EnsureNode) on a host that shares the API server's PKI directory; it
// creates nothing else and fails when the CA is missing.
func OpenCA(dir string) (*Cluster, error) {
	kp, err := LoadKeyPair(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("pki: opening the cluster CA in %s: %w", dir, err)
	}
	if !kp.Cert.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", filepath.Join(dir, CACertFile))
	}
	return &Cluster{Dir: dir, CA: &CA{Cert: kp.Cert, Key: kp.Key, CertPEM: kp.CertPEM}}, nil
}

// EnsureNode loads or issues node name's kubelet certificates under
// Dir/nodes/<name>; hosts are extra serving names and addresses beyond
// NodeHosts' defaults.
func (c *Cluster) EnsureNode(name string, hosts ...string) (*NodeCerts, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("pki: invalid node name %q", name)
	}
	dir := filepath.Join(c.Dir, "nodes", name)
	p := func(f string) string { return filepath.Join(dir, f) }
	n := &NodeCerts{Dir: dir}
	var err error
	if n.Client, err = c.CA.LoadOrIssue(p(NodeClientCertFile), p(NodeClientKeyFile),
		CertSpec{CommonName: NodeUserPrefix + name, Organization: []string{NodesGroup}, Client: true}); err != nil {
		return nil, err
	}
	dns, ips := SplitHosts(NodeHosts(name, hosts...))
	if n.Serving, err = c.CA.LoadOrIssue(p(NodeServingCertFile), p(NodeServingKeyFile),
		CertSpec{CommonName: name, DNSNames: dns, IPs: ips, Server: true}); err != nil {
		return nil, err
	}
	return n, nil
}

// ServingHosts lists the API server's serving names: 127.0.0.1, ::1,
// localhost, the host's name, the `kubernetes` service's IP and DNS names,
// and opts.Hosts.
func ServingHosts(opts ClusterOptions) []string {
	svc := opts.ServiceIP
	if svc == nil {
		svc = DefaultServiceIP
	}
	domain := opts.ClusterDomain
	if domain == "" {
		domain = "cluster.local"
	}
	hosts := []string{"127.0.0.1", "::1", "localhost", svc.String(),
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + domain}
	if h, err := os.Hostname(); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	return dedupe(append(hosts, opts.Hosts...))
}

// NodeHosts lists a kubelet's serving names: 127.0.0.1, ::1, localhost,
// the host's name, the node's name and hosts.
func NodeHosts(node string, hosts ...string) []string {
	out := []string{"127.0.0.1", "::1", "localhost", node}
	if h, err := os.Hostname(); err == nil && h != "" {
		out = append(out, h)
	}
	return dedupe(append(out, hosts...))
}

// SplitHosts separates IP addresses from DNS names; unspecified
// addresses (0.0.0.0, ::) and empty strings are dropped.
func SplitHosts(hosts []string) (dns []string, ips []net.IP) {
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				ips = append(ips, ip)
			}
			continue
		}
		dns = append(dns, h)
	}
	return dns, ips
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
