package podkit

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// waitPodCIDR waits for the control plane (node IPAM) to assign the node
// its PodCIDR, which it does within milliseconds of the registration. It
// reads the node and watches it from there rather than wait for
// nodestatus' next sync or poll, since the node's network, runtime and
// kubelet — and so its Ready status — wait for the range. A zero prefix
// and no error: ctx ended.
func (n *Node) waitPodCIDR(ctx context.Context) (netip.Prefix, error) {
	nodes := n.cfg.Client.CoreV1().Nodes()
	for {
		nd, err := nodes.Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if err == nil {
			if p, ok, err := n.podCIDROf(nd); ok || err != nil {
				return p, err
			}
			w, err := nodes.Watch(ctx, metav1.ListOptions{ResourceVersion: nd.ResourceVersion,
				FieldSelector: fields.OneTermEqualSelector("metadata.name", n.cfg.Name).String()})
			if err == nil {
				p, ok, err := n.watchPodCIDR(w)
				if ok || err != nil {
					return p, err
				}
			}
		}
		// The watch ended (or could not start): nodestatus may have seen
		// the range meanwhile; otherwise read again shortly.
		if s := n.status.PodCIDR(); s != "" {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return netip.Prefix{}, fmt.Errorf("node %s: podCIDR %q: %w", n.cfg.Name, s, err)
			}
			return p, nil
		}
		select {
		case <-ctx.Done():
			return netip.Prefix{}, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// watchPodCIDR reads w until an event carries the node's PodCIDR or the
// watch ends.
func (n *Node) watchPodCIDR(w watch.Interface) (netip.Prefix, bool, error) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			continue
		}
		if nd, ok := ev.Object.(*corev1.Node); ok && nd.Name == n.cfg.Name {
			if p, ok, err := n.podCIDROf(nd); ok || err != nil {
				return p, ok, err
			}
		}
	}
	return netip.Prefix{}, false, nil
}

func (n *Node) podCIDROf(nd *corev1.Node) (netip.Prefix, bool, error) {
	if nd.Spec.PodCIDR == "" {
		return netip.Prefix{}, false, nil
	}
	p, err := netip.ParsePrefix(nd.Spec.PodCIDR)
	if err != nil {
		return netip.Prefix{}, false, fmt.Errorf("node %s: podCIDR %q: %w", n.cfg.Name, nd.Spec.PodCIDR, err)
	}
	return p, true, nil
}
