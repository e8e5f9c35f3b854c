package endpointslice

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// plan is what one sync writes: creations first (so no endpoint is ever
// missing from every slice), then updates, then deletions.
type plan struct {
	create, update, del []*discoveryv1.EndpointSlice
}

func (p plan) empty() bool { return len(p.create)+len(p.update)+len(p.del) == 0 }

// slot is an existing slice being reworked.
type slot struct {
	orig        *discoveryv1.EndpointSlice
	eps         []discoveryv1.Endpoint
	changed     bool
	placeholder bool // kept empty on purpose
}

// planSlices turns the desired groups into writes against the existing
// slices of svc, touching as few slices as it can: an endpoint stays in
// the slice that holds it (updated in place when its conditions change),
// new endpoints first fill slices already being rewritten, then other
// slices with room, then new slices of at most max endpoints. A slice
// left empty is deleted, except that each address type without endpoints
// keeps one empty placeholder slice, as Kubernetes does. Slices of svc
// that another Service (a former one of the same name) owns are deleted.
func planSlices(svc *corev1.Service, groups map[string]*group, existing []*discoveryv1.EndpointSlice, max int, trigger time.Time) plan {
	var p plan
	var slots []*slot
	var orphans []*discoveryv1.EndpointSlice
	placed := map[string]bool{} // group key + endpoint key
	for _, es := range sortedNames(existing) {
		if !ownedBy(es, svc) {
			p.del = append(p.del, es)
			continue
		}
		g := groups[sliceKey(es)]
		if g == nil {
			orphans = append(orphans, es)
			continue
		}
		s := &slot{orig: es}
		for i := range es.Endpoints {
			k := endpointKey(&es.Endpoints[i])
			pos, ok := g.index[k]
			if !ok || placed[g.key+"\x00"+k] || len(s.eps) >= max {
				s.changed = true
				continue
			}
			placed[g.key+"\x00"+k] = true
			if !endpointEqual(&es.Endpoints[i], &g.endpoints[pos]) {
				s.changed = true
			}
			s.eps = append(s.eps, g.endpoints[pos])
		}
		slots = append(slots, s)
	}

	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		var rest []discoveryv1.Endpoint
		for i := range g.endpoints {
			if !placed[g.key+"\x00"+endpointKey(&g.endpoints[i])] {
				rest = append(rest, g.endpoints[i])
			}
		}
		// Slices being rewritten anyway first, then the fullest.
		var mine []*slot
		for _, s := range slots {
			if sliceKey(s.orig) == g.key {
				mine = append(mine, s)
			}
		}
		slices.SortStableFunc(mine, func(a, b *slot) int {
			if a.changed != b.changed {
				if a.changed {
					return -1
				}
				return 1
			}
			return len(b.eps) - len(a.eps)
		})
		for _, s := range mine {
			for len(rest) > 0 && len(s.eps) < max {
				s.eps = append(s.eps, rest[0])
				rest = rest[1:]
				s.changed = true
			}
		}
		for len(rest) > 0 {
			n := min(max, len(rest))
			p.create = append(p.create, newSlice(svc, g.addressType, g.ports, rest[:n], trigger))
			rest = rest[n:]
		}
	}

	// Placeholders for address types without endpoints.
	withEndpoints := map[discoveryv1.AddressType]bool{}
	for _, g := range groups {
		withEndpoints[g.addressType] = true
	}
	needPlaceholder := map[discoveryv1.AddressType]bool{}
	for _, at := range addressTypes(svc) {
		if !withEndpoints[at] {
			needPlaceholder[at] = true
		}
	}
	for _, es := range orphans {
		if needPlaceholder[es.AddressType] && len(es.Endpoints) == 0 && len(es.Ports) == 0 {
			needPlaceholder[es.AddressType] = false
			slots = append(slots, &slot{orig: es, placeholder: true})
			continue
		}
		p.del = append(p.del, es)
	}
	for _, at := range addressTypes(svc) {
		if needPlaceholder[at] {
			p.create = append(p.create, newSlice(svc, at, []discoveryv1.EndpointPort{}, nil, trigger))
		}
	}

	for _, s := range slots {
		if len(s.eps) == 0 && !s.placeholder {
			p.del = append(p.del, s.orig)
			continue
		}
		labels := sliceLabels(svc)
		if !s.changed && maps.Equal(labels, s.orig.Labels) {
			continue
		}
		es := s.orig.DeepCopy()
		es.Labels = labels
		es.Endpoints = s.eps
		if es.Endpoints == nil {
			es.Endpoints = []discoveryv1.Endpoint{}
		}
		setTrigger(&es.ObjectMeta, trigger)
		p.update = append(p.update, es)
	}
	return p
}

// newSlice builds a slice of svc; the API server names it <svc>-<random>.
func newSlice(svc *corev1.Service, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint, trigger time.Time) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			GenerateName:    slicePrefix(svc.Name),
			Labels:          sliceLabels(svc),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: at,
		Ports:       slices.Clone(ports),
		Endpoints:   slices.Clone(eps),
	}
	if es.Endpoints == nil {
		es.Endpoints = []discoveryv1.Endpoint{}
	}
	setTrigger(&es.ObjectMeta, trigger)
	return es
}

// slicePrefix is "<svc>-" unless that is no valid name prefix.
func slicePrefix(name string) string {
	if len(validation.IsDNS1123Subdomain(name+"-a")) == 0 {
		return name + "-"
	}
	return name
}

// sliceLabels are the Service's labels (minus the reserved ones) plus the
// service-name, managed-by and, for headless Services, headless labels.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := make(map[string]string, len(svc.Labels)+3)
	for k, v := range svc.Labels {
		if k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService {
			continue
		}
		out[k] = v
	}
	if !hasClusterIP(svc) {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = ManagedBy
	return out
}

func ownedBy(es *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range es.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// setTrigger writes (or, for a zero time, removes) the
// endpoints.kubernetes.io/last-change-trigger-time annotation.
func setTrigger(m *metav1.ObjectMeta, trigger time.Time) {
	if trigger.IsZero() {
		delete(m.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
}
