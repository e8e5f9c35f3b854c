package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultKubeletPort is where a kubelet serves when its node does not say
// (status.daemonEndpoints.kubeletEndpoint.port 0), as in Kubernetes.
const DefaultKubeletPort = 10250

// ErrNoKubeletAddress: the node reports no address of a usable type.
var ErrNoKubeletAddress = errors.New("no preferred addresses found")

// KubeletClientFunc tells the API server how to reach a node's kubelet
// server, for pods/log: the base URL (scheme, host and port; the server
// appends /containerLogs/...) and the transport to send the request with.
// An in-process cluster can return a transport that calls the kubelet's
// handler directly, without TCP.
type KubeletClientFunc func(ctx context.Context, node *corev1.Node) (base *url.URL, rt http.RoundTripper, err error)

// KubeletAddressTypes is the order in which KubeletURL picks a node
// address (kube-apiserver's --kubelet-preferred-address-types, with the
// InternalIP first because podkit nodes rarely have resolvable names).
func KubeletAddressTypes() []corev1.NodeAddressType {
	return []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName, corev1.NodeInternalDNS,
		corev1.NodeExternalIP, corev1.NodeExternalDNS}
}

// KubeletURL returns scheme://<address>:<port> of node's kubelet: the
// first address of the first type in preferred (KubeletAddressTypes when
// empty) and the port the node reports, or DefaultKubeletPort.
func KubeletURL(node *corev1.Node, scheme string, preferred ...corev1.NodeAddressType) (*url.URL, error) {
	if len(preferred) == 0 {
		preferred = KubeletAddressTypes()
	}
	host := ""
	for _, t := range preferred {
		for _, a := range node.Status.Addresses {
			if a.Type == t && a.Address != "" {
				host = a.Address
				break
			}
		}
		if host != "" {
			break
		}
	}
	if host == "" {
		return nil, fmt.Errorf("node %s: %w; known addresses: %v", node.Name, ErrNoKubeletAddress, node.Status.Addresses)
	}
	port := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = DefaultKubeletPort
	}
	return &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}, nil
}

// DefaultKubeletClient reaches kubelets over plain HTTP at KubeletURL with
// rt, or with a transport of its own (no proxies: kubelets are reached
// directly) when rt is nil.
func DefaultKubeletClient(rt http.RoundTripper) KubeletClientFunc {
	if rt == nil {
		rt = &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost:   8,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
		}
	}
	return func(_ context.Context, node *corev1.Node) (*url.URL, http.RoundTripper, error) {
		u, err := KubeletURL(node, "http")
		if err != nil {
			return nil, nil, err
		}
		return u, rt, nil
	}
}
