package proxy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The view: the Services and EndpointSlices the proxier knows, filled by
// Run's informers or by Sync's list, and which Services changed since the
// last sync. Objects are shared with the informers' caches and never
// modified. All functions ending in Locked need p.mu.

// refresh replaces the view with a fresh list from the API.
func (p *Proxier) refresh(ctx context.Context) error {
	svcs, err := p.cfg.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	eps, err := p.cfg.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list endpointslices: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resetViewLocked()
	for i := range svcs.Items {
		p.setServiceLocked(&svcs.Items[i])
	}
	for i := range eps.Items {
		p.setSliceLocked(nil, &eps.Items[i])
	}
	return nil
}

// resetViewLocked empties the view, marking everything it held dirty.
func (p *Proxier) resetViewLocked() {
	for n := range p.services {
		p.dirty[n] = struct{}{}
	}
	for n := range p.slices {
		p.dirty[n] = struct{}{}
	}
	p.services = map[types.NamespacedName]*corev1.Service{}
	p.slices = map[types.NamespacedName]map[string]*discoveryv1.EndpointSlice{}
}

func (p *Proxier) setServiceLocked(svc *corev1.Service) {
	n := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	p.services[n] = svc
	p.dirty[n] = struct{}{}
}

func (p *Proxier) deleteServiceLocked(n types.NamespacedName) {
	delete(p.services, n)
	p.dirty[n] = struct{}{}
}

// sliceService names the Service a slice belongs to.
func sliceService(s *discoveryv1.EndpointSlice) (types.NamespacedName, bool) {
	name := s.Labels[discoveryv1.LabelServiceName]
	return types.NamespacedName{Namespace: s.Namespace, Name: name}, name != ""
}

// setSliceLocked records cur (nil: deleted) replacing old (nil: new).
func (p *Proxier) setSliceLocked(old, cur *discoveryv1.EndpointSlice) {
	if old != nil {
		if n, ok := sliceService(old); ok {
			if m := p.slices[n]; m != nil {
				delete(m, old.Name)
				if len(m) == 0 {
					delete(p.slices, n)
				}
			}
			p.dirty[n] = struct{}{}
		}
	}
	if cur == nil {
		return
	}
	n, ok := sliceService(cur)
	if !ok {
		return
	}
	m := p.slices[n]
	if m == nil {
		m = map[string]*discoveryv1.EndpointSlice{}
		p.slices[n] = m
	}
	m[cur.Name] = cur
	p.dirty[n] = struct{}{}
	if t, err := time.Parse(time.RFC3339Nano, cur.Annotations[corev1.EndpointsLastChangeTriggerTime]); err == nil {
		p.triggers[n] = append(p.triggers[n], t)
	}
}

// poke asks Run's loop for a sync.
func (p *Proxier) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func sliceList(m map[string]*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	out := make([]*discoveryv1.EndpointSlice, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	return out
}
