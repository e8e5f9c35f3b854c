package cni

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits the kubelet applies to a pod's resolver configuration
// (ExpandedDNSConfig, GA since Kubernetes 1.28).
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
	maxDomainLength       = 253
	maxResolvConfSize     = 10 << 20
)

// defaultDNSOptions are the options of every ClusterFirst pod.
var defaultDNSOptions = []string{"ndots:5"}

// NodeDNS is the node's DNS setup, the kubelet's --cluster-dns,
// --cluster-domain and --resolv-conf.
type NodeDNS struct {
	// ClusterDNS are the cluster DNS service addresses; ClusterFirst pods
	// use only these. Without them ClusterFirst falls back to Default.
	ClusterDNS []netip.Addr
	// ClusterDomain is the cluster's DNS domain, e.g. cluster.local.
	ClusterDomain string
	// Host is the parsed host resolver configuration (--resolv-conf); nil
	// means the flag is empty, and Default pods then resolve through the
	// node itself (127.0.0.1 / ::1 per NodeIPs family, search ".").
	Host *ResolvConfig
	// NodeIPs pick the loopback nameservers when Host is nil.
	NodeIPs []netip.Addr
}

// ResolvConfig is the content of a resolv.conf.
type ResolvConfig struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// ParseResolvConf reads a resolv.conf as the kubelet does: nameserver lines
// accumulate, the last search line and the last options line win, trailing
// dots are dropped from search domains, comments are ignored.
func ParseResolvConf(r io.Reader) (ResolvConfig, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxResolvConfSize+1))
	if err != nil {
		return ResolvConfig{}, fmt.Errorf("read resolv.conf: %w", err)
	}
	if len(data) > maxResolvConfSize {
		return ResolvConfig{}, fmt.Errorf("resolv.conf is larger than %d bytes", maxResolvConfSize)
	}
	var c ResolvConfig
	var empty int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxResolvConfSize)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				empty++
				continue
			}
			c.Nameservers = append(c.Nameservers, f[1])
		case "search":
			c.Searches = c.Searches[:0]
			for _, s := range f[1:] {
				c.Searches = append(c.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			c.Options = append([]string(nil), f[1:]...)
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("read resolv.conf: %w", err)
	}
	if empty > 0 {
		return c, fmt.Errorf("resolv.conf has %d nameserver line(s) without an address", empty)
	}
	return c, nil
}

// Bytes renders the configuration as containerd writes a sandbox's
// resolv.conf: search, then nameservers, then options.
func (c ResolvConfig) Bytes() []byte {
	var b bytes.Buffer
	if len(c.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(c.Searches, " "))
	}
	for _, ns := range c.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(c.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(c.Options, " "))
	}
	return b.Bytes()
}

// PodDNS computes a pod's resolver configuration exactly as the kubelet
// does: by dnsPolicy (ClusterFirst, ClusterFirstWithHostNet, Default, None;
// ClusterFirst on the host network behaves as Default, ClusterFirst without
// cluster DNS falls back to Default), then merges spec.dnsConfig
// (nameservers and searches appended without duplicates, options merged by
// name with the pod's values winning), then trims to the resolver limits.
// Each trim or fallback yields a warning, the text of the kubelet's event.
func PodDNS(pod *corev1.Pod, node NodeDNS) (ResolvConfig, []string, error) {
	var warnings []string
	base := ResolvConfig{}
	if node.Host != nil {
		base = ResolvConfig{
			Nameservers: append([]string(nil), node.Host.Nameservers...),
			Searches:    append([]string(nil), node.Host.Searches...),
			Options:     append([]string(nil), node.Host.Options...),
		}
	}
	cluster := false
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
		base = ResolvConfig{}
	case corev1.DNSClusterFirstWithHostNet:
		cluster = true
	case corev1.DNSClusterFirst, "":
		cluster = !pod.Spec.HostNetwork
	case corev1.DNSDefault:
	default:
		return ResolvConfig{}, nil, fmt.Errorf("invalid dnsPolicy %q", pod.Spec.DNSPolicy)
	}
	if cluster && len(node.ClusterDNS) == 0 {
		warnings = append(warnings, fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", corev1.DNSClusterFirst, corev1.DNSDefault))
		cluster = false
	}
	switch {
	case cluster:
		base.Nameservers = base.Nameservers[:0]
		for _, ip := range node.ClusterDNS {
			base.Nameservers = append(base.Nameservers, ip.String())
		}
		base.Searches = clusterSearches(pod.Namespace, node.ClusterDomain, base.Searches)
		base.Options = append([]string(nil), defaultDNSOptions...)
	case pod.Spec.DNSPolicy != corev1.DNSNone && node.Host == nil:
		for _, ip := range node.NodeIPs {
			if ip.Is4() {
				base.Nameservers = append(base.Nameservers, "127.0.0.1")
			} else {
				base.Nameservers = append(base.Nameservers, "::1")
			}
		}
		if len(base.Nameservers) == 0 {
			base.Nameservers = []string{"127.0.0.1"}
		}
		base.Searches = []string{"."}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		base.Nameservers = omitDuplicates(append(base.Nameservers, dc.Nameservers...))
		base.Searches = omitDuplicates(append(base.Searches, dc.Searches...))
		base.Options = mergeDNSOptions(base.Options, dc.Options)
	}
	if len(base.Nameservers) > MaxDNSNameservers {
		base.Nameservers = base.Nameservers[:MaxDNSNameservers]
		warnings = append(warnings, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+strings.Join(base.Nameservers, " "))
	}
	var trimmed bool
	base.Searches, trimmed = fitSearches(base.Searches)
	if trimmed {
		warnings = append(warnings, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+strings.Join(base.Searches, " "))
	}
	return base, warnings, nil
}

// ResolvConf is PodDNS rendered as a file.
func ResolvConf(pod *corev1.Pod, node NodeDNS) ([]byte, []string, error) {
	c, warnings, err := PodDNS(pod, node)
	if err != nil {
		return nil, warnings, err
	}
	return c.Bytes(), warnings, nil
}

// clusterSearches puts <ns>.svc.<domain>, svc.<domain>, <domain> before the
// host's search domains.
func clusterSearches(namespace, domain string, host []string) []string {
	if domain == "" {
		return host
	}
	s := []string{namespace + ".svc." + domain, "svc." + domain, domain}
	return omitDuplicates(append(s, host...))
}

func omitDuplicates(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions merges options by name; a pod option replaces an existing
// one of the same name. Unlike the kubelet (which goes through a map) the
// order is stable: first appearance.
func mergeDNSOptions(existing []string, pod []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, op := range existing {
		name, value, _ := strings.Cut(op, ":")
		set(name, value)
	}
	for _, op := range pod {
		v := ""
		if op.Value != nil {
			v = *op.Value
		}
		set(op.Name, v)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if v := values[n]; v != "" {
			out = append(out, n+":"+v)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// fitSearches applies the kubelet's search limits: at most 32 domains,
// none longer than 253 characters, at most 2048 characters in all (dropping
// from the end).
func fitSearches(s []string) ([]string, bool) {
	trimmed := false
	if len(s) > MaxDNSSearchPaths {
		s, trimmed = s[:MaxDNSSearchPaths], true
	}
	kept := s[:0:0]
	for _, d := range s {
		if len(d) > maxDomainLength {
			trimmed = true
			continue
		}
		kept = append(kept, d)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > MaxDNSSearchListChars {
		kept, trimmed = kept[:len(kept)-1], true
	}
	return kept, trimmed
}
