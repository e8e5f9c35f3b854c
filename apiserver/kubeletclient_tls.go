package apiserver

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TLSKubeletClient reaches kubelets over HTTPS at KubeletURL: it presents
// cfg's client certificate (the API server's kubelet-client identity) and
// verifies the kubelet's serving certificate against cfg.RootCAs, so
// pods/log neither leaks to nor trusts an impostor on the node's address.
func TLSKubeletClient(cfg *tls.Config) KubeletClientFunc {
	rt := &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       cfg.Clone(),
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	return func(_ context.Context, node *corev1.Node) (*url.URL, http.RoundTripper, error) {
		u, err := KubeletURL(node, "https")
		if err != nil {
			return nil, nil, err
		}
		return u, rt, nil
	}
}
