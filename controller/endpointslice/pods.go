package endpointslice

import (
	"fmt"
	"net/netip"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podkit/podkit/controller"
)

// includePod reports whether pod belongs in a Service's endpoints at all:
// it has an IP, it is not terminal (Succeeded or Failed), and — unless
// includeTerminating — it is not being deleted.
func includePod(pod *corev1.Pod, includeTerminating bool) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// podIPs returns the pod's addresses, canonicalised; status.podIPs wins
// over the legacy status.podIP.
func podIPs(pod *corev1.Pod) []netip.Addr {
	raw := make([]string, 0, 2)
	for _, ip := range pod.Status.PodIPs {
		raw = append(raw, ip.IP)
	}
	if len(raw) == 0 && pod.Status.PodIP != "" {
		raw = append(raw, pod.Status.PodIP)
	}
	var out []netip.Addr
	for _, s := range raw {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// setHostname: a pod whose spec.subdomain names the Service gets its
// spec.hostname published (StatefulSet pods under their governing Service).
func setHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// ErrNoPort is wrapped by findPort when a pod has no container port of a
// Service port's named targetPort.
var ErrNoPort = fmt.Errorf("no container port for the service's named target port")

// findPort resolves a Service port's targetPort on pod: a number is used
// as is (0, unset, means the Service port itself); a name is looked up
// among the container ports of the pod's containers and sidecars
// (restartable init containers) with the same protocol.
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	switch sp.TargetPort.Type {
	case intstr.Int:
		if sp.TargetPort.IntVal == 0 {
			return sp.Port, nil
		}
		return sp.TargetPort.IntVal, nil
	case intstr.String:
		if sp.TargetPort.StrVal == "" {
			return sp.Port, nil
		}
		proto := protocol(sp.Protocol)
		for _, c := range pod.Spec.Containers {
			if p, ok := namedPort(c.Ports, sp.TargetPort.StrVal, proto); ok {
				return p, nil
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			if p, ok := namedPort(c.Ports, sp.TargetPort.StrVal, proto); ok {
				return p, nil
			}
		}
	}
	return 0, fmt.Errorf("pod %s/%s, port %q: %w", pod.Namespace, pod.Name, sp.TargetPort.String(), ErrNoPort)
}

func namedPort(ports []corev1.ContainerPort, name string, proto corev1.Protocol) (int32, bool) {
	for _, p := range ports {
		if p.Name == name && protocol(p.Protocol) == proto {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// addressTypes returns the address families a Service's endpoints are
// published in: its ipFamilies, else the family of its ClusterIP, else
// (a headless Service on an API server that does not set ipFamilies) both.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return out
	}
	if hasClusterIP(svc) {
		if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && ip.Unmap().Is6() {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

func hasClusterIP(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

func familyMatches(ip netip.Addr, at discoveryv1.AddressType) bool {
	return (at == discoveryv1.AddressTypeIPv6) == ip.Is6()
}

// podHandler enqueues the Services a pod event concerns: those selecting
// the pod before or after the event. Updates that change nothing an
// endpoint shows (IPs, readiness, deletion, hostname, labels) are ignored.
func podHandler(services corelisters.ServiceLister, enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	forPod := func(ns string, set labels.Set) sets.Set[string] {
		out := sets.New[string]()
		list, err := services.Services(ns).List(labels.Everything())
		if err != nil {
			return out
		}
		for _, svc := range list {
			if svc.Spec.Selector != nil && labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(set) {
				out.Insert(svc.Namespace + "/" + svc.Name)
			}
		}
		return out
	}
	one := func(obj any) {
		if pod := podOf(obj); pod != nil {
			for key := range forPod(pod.Namespace, pod.Labels) {
				enqueue(key)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    one,
		DeleteFunc: one,
		UpdateFunc: func(oldObj, newObj any) {
			oldPod, newPod := podOf(oldObj), podOf(newObj)
			if oldPod == nil || newPod == nil || oldPod.ResourceVersion == newPod.ResourceVersion {
				return
			}
			changed, relabeled := podChanged(oldPod, newPod)
			if !changed && !relabeled {
				return
			}
			keys := forPod(newPod.Namespace, newPod.Labels)
			if relabeled {
				old := forPod(oldPod.Namespace, oldPod.Labels)
				if changed {
					keys = keys.Union(old)
				} else {
					keys = keys.SymmetricDifference(old)
				}
			}
			for key := range keys {
				enqueue(key)
			}
		},
	}
}

// podChanged tells whether an update may change the pod's endpoints
// (changed) or the Services selecting it (relabeled).
func podChanged(old, cur *corev1.Pod) (changed, relabeled bool) {
	hostChanged := old.Spec.Hostname != cur.Spec.Hostname || old.Spec.Subdomain != cur.Spec.Subdomain
	relabeled = !reflect.DeepEqual(old.Labels, cur.Labels) || hostChanged
	changed = hostChanged || !old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		controller.IsPodReady(old) != controller.IsPodReady(cur) ||
		old.Status.Phase != cur.Status.Phase ||
		old.Spec.NodeName != cur.Spec.NodeName ||
		!reflect.DeepEqual(podIPs(old), podIPs(cur))
	return changed, relabeled
}

func podOf(obj any) *corev1.Pod {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// serviceKeyHandler enqueues the key of every Service event.
func serviceKeyHandler(enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if key, err := controller.KeyFunc(obj); err == nil {
			enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, cur any) { add(cur) },
		DeleteFunc: add,
	}
}
