package apiserver

import (
	corev1 "k8s.io/api/core/v1"
)

// Service update strategy, as Kubernetes' service registry: an update that
// leaves allocated values out keeps them (kubectl replace and apply resend
// the manifest without them), and a type change drops the values the new
// type has no use for — unless the client changed them too, which
// validation then judges — so that the allocator releases them.

func prepareServiceUpdate(svc, old *corev1.Service) {
	normalizeClusterIPs(svc, old)
	patchAllocatedValues(svc, old)
	dropTypeDependentFields(svc, old)
}

// normalizeClusterIPs keeps clusterIP and clusterIPs in step when a client
// (an old one, or a patch) sent only one of them.
func normalizeClusterIPs(svc, old *corev1.Service) {
	if len(old.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) == 0 && old.Spec.ClusterIP == svc.Spec.ClusterIP {
		svc.Spec.ClusterIPs = old.Spec.ClusterIPs
	}
	if old.Spec.ClusterIP == svc.Spec.ClusterIP || !sameStrings(old.Spec.ClusterIPs, svc.Spec.ClusterIPs) {
		return
	}
	if old.Spec.ClusterIP != "" && svc.Spec.ClusterIP == "" {
		svc.Spec.ClusterIPs = nil // cleared on the client's behalf
	} else {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
}

// patchAllocatedValues carries over the cluster IPs, IP families, node
// ports (by port name, unless the number now serves another port) and
// health check node port that the update omits, while the type still uses
// them.
func patchAllocatedValues(svc, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = old.Spec.IPFamilies
		}
	}
	if needsNodePort(old) && needsNodePort(svc) {
		inNew := map[int32]bool{}
		for _, p := range svc.Spec.Ports {
			inNew[p.NodePort] = true
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				continue
			}
			if np := byName[p.Name]; np != 0 && !inNew[np] {
				p.NodePort = np
			}
		}
	}
	if needsHealthCheckNodePort(old) && needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropTypeDependentFields clears what the new type does not use, when the
// client left it as it was.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if needsClusterIP(old) && !needsClusterIP(svc) {
		if svc.Spec.ClusterIP == old.Spec.ClusterIP && sameStrings(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if sameFamilies(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if samePolicy(svc.Spec.IPFamilyPolicy, old.Spec.IPFamilyPolicy) {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && nodePortsSubset(svc, old) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckNodePort(old) && !needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	wasLB, isLB := old.Spec.Type == corev1.ServiceTypeLoadBalancer, svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	if wasLB && !isLB {
		if a, b := svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if a, b := svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass; (a == nil) == (b == nil) && (a == nil || *a == *b) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if needsNodePort(old) && !needsNodePort(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
	if !isLB {
		svc.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	}
}

func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

func needsNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// nodePortsSubset: svc adds no node port old did not have.
func nodePortsSubset(svc, old *corev1.Service) bool {
	had := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		had[p.NodePort] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !had[p.NodePort] {
			return false
		}
	}
	return true
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameFamilies(a, b []corev1.IPFamily) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func samePolicy(a, b *corev1.IPFamilyPolicy) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
