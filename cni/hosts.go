package cni

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrInvalidHostname reports a pod hostname or subdomain that is not a DNS
// label, or an FQDN too long for the kernel.
var ErrInvalidHostname = errors.New("invalid pod hostname")

const (
	managedHostsHeader            = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
	hostnameMaxLen                = 63
	fqdnMaxLen                    = 64
)

// PodHostname returns the pod's hostname and DNS domain as the kubelet
// generates them: spec.hostnameOverride when set; otherwise spec.hostname
// or the pod name, cut to 63 characters without a trailing '-' or '.'; the
// domain is <subdomain>.<namespace>.svc.<clusterDomain> when
// spec.subdomain is set.
func PodHostname(pod *corev1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if pod.Spec.HostnameOverride != nil {
		return *pod.Spec.HostnameOverride, "", nil
	}
	hostname = pod.Name
	if pod.Spec.Hostname != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Hostname); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s: %w", pod.Spec.Hostname, strings.Join(msgs, ";"), ErrInvalidHostname)
		}
		hostname = pod.Spec.Hostname
	}
	if len(hostname) > hostnameMaxLen {
		hostname = strings.TrimRight(hostname[:hostnameMaxLen], "-.")
		if hostname == "" {
			return "", "", fmt.Errorf("hostname for pod %q was invalid: %w", pod.Name, ErrInvalidHostname)
		}
	}
	if pod.Spec.Subdomain != "" {
		if msgs := validation.IsDNS1123Label(pod.Spec.Subdomain); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s: %w", pod.Spec.Subdomain, strings.Join(msgs, ";"), ErrInvalidHostname)
		}
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain, nil
}

// KernelHostname is the name the pod's UTS namespace gets: the hostname, or
// the FQDN when spec.setHostnameAsFQDN is true and there is a domain (an
// error when that exceeds the kernel's 64 characters).
func KernelHostname(pod *corev1.Pod, clusterDomain string) (string, error) {
	hostname, domain, err := PodHostname(pod, clusterDomain)
	if err != nil {
		return "", err
	}
	if domain != "" && pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN {
		fqdn := hostname + "." + domain
		if len(fqdn) > fqdnMaxLen {
			return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested): %w", fqdn, fqdnMaxLen, len(fqdn), ErrInvalidHostname)
		}
		return fqdn, nil
	}
	return hostname, nil
}

// HostnameFile is the content of the pod's /etc/hostname. Host network
// pods see the node's hostname.
func HostnameFile(pod *corev1.Pod, clusterDomain, nodeHostname string) ([]byte, error) {
	if pod.Spec.HostNetwork {
		return []byte(nodeHostname + "\n"), nil
	}
	h, err := KernelHostname(pod, clusterDomain)
	if err != nil {
		return nil, err
	}
	return []byte(h + "\n"), nil
}

// HostsFile is the content of the pod's /etc/hosts as the kubelet manages
// it: localhost entries, one line per pod IP naming the pod (with its FQDN
// first when it has a subdomain), then spec.hostAliases. A host network pod
// gets the node's hosts file (nodeHosts) followed by its aliases.
func HostsFile(pod *corev1.Pod, podIPs []netip.Addr, clusterDomain string, nodeHosts []byte) ([]byte, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderHostNetwork)
		b.Write(nodeHosts)
		writeHostAliases(&b, pod.Spec.HostAliases)
		return b.Bytes(), nil
	}
	hostname, domain, err := PodHostname(pod, clusterDomain)
	if err != nil {
		return nil, err
	}
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	writeHostAliases(&b, pod.Spec.HostAliases)
	return b.Bytes(), nil
}

func writeHostAliases(b *bytes.Buffer, aliases []corev1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
}
