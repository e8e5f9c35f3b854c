package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var serviceKind = schema.GroupKind{Kind: "Service"}

// Allocate gives a Service being created what its type needs, filling its
// spec in place: ipFamilyPolicy and ipFamilies, a cluster IP (the one asked
// for, or a free one; none for headless and ExternalName services) and node
// ports (NodePort and LoadBalancer; the health check node port of a Local
// LoadBalancer). svc must have passed validation. Errors are API errors
// with Kubernetes' messages: 422 Invalid for a requested value that is
// taken or out of range, 500 when a range is full. With dryRun nothing is
// reserved: requested values are checked and free ones only picked.
func (a *Allocator) Allocate(ctx context.Context, svc *corev1.Service, dryRun bool) (*Txn, error) {
	if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	return a.allocate(ctx, svc, nil, dryRun)
}

// Reallocate is Allocate for an update of old to svc: values the old
// version held are kept without being reserved again, new ones are
// reserved, and those svc no longer holds (a change to ExternalName drops
// the cluster IP, to ClusterIP the node ports) are released by Commit.
func (a *Allocator) Reallocate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (*Txn, error) {
	return a.allocate(ctx, svc, old, dryRun)
}

func (a *Allocator) allocate(ctx context.Context, svc, old *corev1.Service, dryRun bool) (*Txn, error) {
	if err := a.Sync(ctx); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if err := a.initIPFamilies(svc, old); err != nil {
		return nil, err
	}
	t := &Txn{a: a, dry: dryRun, owner: ownerOf(svc.Namespace, svc.Name)}
	if dryRun {
		t.takenIPs, t.takenPorts = map[netip.Addr]bool{}, map[int]bool{}
	}
	if err := t.allocClusterIPs(ctx, svc, old); err != nil {
		t.Revert()
		return nil, err
	}
	if err := t.allocNodePorts(ctx, svc, old); err != nil {
		t.Revert()
		return nil, err
	}
	return t, nil
}

// initIPFamilies fills ipFamilyPolicy and ipFamilies as Kubernetes'
// allocator does on a single-stack cluster, and rejects families the
// cluster does not serve.
func (a *Allocator) initIPFamilies(svc, old *corev1.Service) error {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	family := a.ips.Family()
	headlessSelectorless := isHeadless(svc) && len(spec.Selector) == 0
	if spec.IPFamilyPolicy == nil {
		policy := corev1.IPFamilyPolicySingleStack
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			policy = *old.Spec.IPFamilyPolicy
		case headlessSelectorless:
			policy = corev1.IPFamilyPolicyRequireDualStack
		}
		spec.IPFamilyPolicy = &policy
	}
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	var errs field.ErrorList
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if i < len(spec.IPFamilies) || ip == "" {
			continue
		}
		if f := familyOf(ip); f != family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", f)))
		} else {
			spec.IPFamilies = append(spec.IPFamilies, f)
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if headlessSelectorless {
		// Headless services without selector may name both families even
		// on a single-stack cluster: they get no cluster IP.
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{family}
		}
		if len(spec.IPFamilies) < 2 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			spec.IPFamilies = append(spec.IPFamilies, otherFamily(spec.IPFamilies[0]))
		}
		return nil
	}
	if *spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, f := range spec.IPFamilies {
		if f != family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), f, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(serviceKind, svc.Name, errs)
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{family}
	}
	return nil
}

// allocClusterIPs reserves the cluster IP svc asks for, or a free one.
func (t *Txn) allocClusterIPs(ctx context.Context, svc, old *corev1.Service) error {
	before := heldIPs(old)
	if needsClusterIP(svc) && !isHeadless(svc) {
		ips := svc.Spec.ClusterIPs
		if len(ips) == 0 || ips[0] == "" {
			ip, err := t.nextIP(ctx)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
			}
			svc.Spec.ClusterIP = ip.String()
			svc.Spec.ClusterIPs = append([]string{ip.String()}, ips[min(1, len(ips)):]...)
		}
		for _, s := range svc.Spec.ClusterIPs {
			ip, ok := parseIP(s)
			if !ok || containsIP(before, ip) || (!t.dry && containsIP(t.ips, ip)) || t.takenIPs[ip] {
				continue
			}
			if err := t.reserveIP(ctx, ip); err != nil {
				if !isRangeError(err) {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate IP %v: %w", s, err))
				}
				errs := field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %v: %v", s, err))}
				return apierrors.NewInvalid(serviceKind, svc.Name, errs)
			}
		}
	}
	after := heldIPs(svc)
	for _, ip := range before {
		if !containsIP(after, ip) {
			t.releaseIPs = append(t.releaseIPs, ip)
		}
	}
	return nil
}

// allocNodePorts reserves the node ports svc asks for and picks free ones
// for ports without; ports of one service number (TCP and UDP 53) share a
// node port, as in Kubernetes.
func (t *Txn) allocNodePorts(ctx context.Context, svc, old *corev1.Service) error {
	before := map[int]bool{}
	for _, p := range heldPorts(old) {
		before[p] = true
	}
	owned := map[int]bool{}
	if needsNodePort(svc) {
		for i := range svc.Spec.Ports {
			p := int(svc.Spec.Ports[i].NodePort)
			if p == 0 || owned[p] {
				continue
			}
			if !before[p] {
				if err := t.reservePort(ctx, p); err != nil {
					if !isRangeError(err) {
						return apierrors.NewInternalError(fmt.Errorf("failed to allocate node port %v: %w", p, err))
					}
					errs := field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), svc.Spec.Ports[i].NodePort, err.Error())}
					return apierrors.NewInvalid(serviceKind, svc.Name, errs)
				}
			}
			owned[p] = true
		}
		if shouldAllocateNodePorts(svc) {
			byServicePort := map[int32]int32{}
			for _, sp := range svc.Spec.Ports {
				if _, ok := byServicePort[sp.Port]; !ok && sp.NodePort != 0 {
					byServicePort[sp.Port] = sp.NodePort
				}
			}
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				if sp.NodePort != 0 {
					continue
				}
				if np, ok := byServicePort[sp.Port]; ok {
					sp.NodePort = np
					continue
				}
				p, err := t.nextPort(ctx)
				if err != nil {
					return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", err))
				}
				sp.NodePort = int32(p)
				byServicePort[sp.Port] = sp.NodePort
				owned[p] = true
			}
		}
	}
	if needsHealthCheckNodePort(svc) {
		hc := int(svc.Spec.HealthCheckNodePort)
		switch {
		case hc != 0 && owned[hc]:
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %w", hc, ErrPortAllocated))
		case hc != 0 && !before[hc]:
			if err := t.reservePort(ctx, hc); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %v: %w", hc, err))
			}
		case hc == 0:
			p, err := t.nextPort(ctx)
			if err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a HealthCheck NodePort %v: %w", hc, err))
			}
			hc = p
			svc.Spec.HealthCheckNodePort = int32(p)
		}
		owned[hc] = true
	}
	for _, p := range heldPorts(old) {
		if !owned[p] {
			t.releasePorts = append(t.releasePorts, p)
		}
	}
	return nil
}

// heldIPs returns the cluster IPs a stored Service holds.
func heldIPs(svc *corev1.Service) []netip.Addr {
	if svc == nil || !needsClusterIP(svc) {
		return nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if ip, ok := parseIP(s); ok && !containsIP(out, ip) {
			out = append(out, ip)
		}
	}
	return out
}

// heldPorts returns the node ports (and health check node port) a stored
// Service holds.
func heldPorts(svc *corev1.Service) []int {
	if svc == nil {
		return nil
	}
	var out []int
	add := func(p int32) {
		for _, x := range out {
			if x == int(p) {
				return
			}
		}
		out = append(out, int(p))
	}
	if needsNodePort(svc) {
		for _, sp := range svc.Spec.Ports {
			if sp.NodePort != 0 {
				add(sp.NodePort)
			}
		}
	}
	if needsHealthCheckNodePort(svc) && svc.Spec.HealthCheckNodePort != 0 {
		add(svc.Spec.HealthCheckNodePort)
	}
	return out
}

// isRangeError tells a requested value that is taken or out of range (the
// client's to fix: 422) from a failure to record it (500).
func isRangeError(err error) bool {
	return errors.Is(err, ErrIPAllocated) || errors.Is(err, ErrPortAllocated) || errors.Is(err, ErrNotInRange)
}

func needsClusterIP(svc *corev1.Service) bool { return svc.Spec.Type != corev1.ServiceTypeExternalName }

func needsNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

func needsHealthCheckNodePort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// shouldAllocateNodePorts: NodePort services always, LoadBalancers unless
// allocateLoadBalancerNodePorts is false.
func shouldAllocateNodePorts(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeNodePort {
		return true
	}
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		(svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts)
}

func isHeadless(svc *corev1.Service) bool {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 {
		return svc.Spec.ClusterIP == corev1.ClusterIPNone
	}
	return ips[0] == corev1.ClusterIPNone
}

// parseIP parses a cluster IP as validation accepts it (leading zeros
// included).
func parseIP(s string) (netip.Addr, bool) {
	if s == "" || s == corev1.ClusterIPNone {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(netutils.ParseIPSloppy(s))
	return ip.Unmap(), ok
}

func containsIP(ips []netip.Addr, ip netip.Addr) bool {
	for _, x := range ips {
		if x == ip {
			return true
		}
	}
	return false
}

func familyOf(ip string) corev1.IPFamily {
	if netutils.IsIPv6String(ip) {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

func otherFamily(f corev1.IPFamily) corev1.IPFamily {
	if f == corev1.IPv4Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
