package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// validateClusterIPs validates clusterIP/clusterIPs, ipFamilies and
// ipFamilyPolicy: valid IPs or "None" alone, at most one per family and
// matching the families given.
func (v *Validator) validateClusterIPs(s *corev1.Service, oldIPs []string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	ipsPath := specPath.Child("clusterIPs")
	ips := serviceClusterIPs(s)
	if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if s.Spec.ClusterIP == "" && len(s.Spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(ipsPath, s.Spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, fam := range s.Spec.IPFamilies {
		if fam != corev1.IPv4Protocol && fam != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilies").Index(i), fam, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
		if seen[fam] {
			errs = append(errs, field.Duplicate(specPath.Child("ipFamilies").Index(i), fam))
		}
		seen[fam] = true
	}
	if pol := s.Spec.IPFamilyPolicy; pol != nil {
		switch *pol {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("ipFamilyPolicy"), *pol, []corev1.IPFamilyPolicy{
				corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}))
		}
	}
	invalid := false
	for i, ip := range ips {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(ips) > 1 {
				invalid = true
				errs = append(errs, field.Invalid(ipsPath, ips, "'None' must be the first and only value"))
			}
			continue
		}
		e := validation.IsValidIPForLegacyField(ipsPath.Index(i), ip, v.opts.strictIPs, oldIPs)
		invalid = invalid || len(e) != 0
		errs = append(errs, e...)
	}
	if len(ips) > 2 {
		errs = append(errs, field.Invalid(ipsPath, ips, "may only hold up to 2 values"))
	}
	if invalid {
		return errs
	}
	if len(ips) > 1 {
		if dual, err := netutils.IsDualStackIPStrings(ips); err != nil || !dual {
			errs = append(errs, field.Invalid(ipsPath, ips, "may specify no more than one IP for each IP family"))
		}
	}
	if !isHeadless(s) {
		for i, ip := range ips {
			if i >= len(s.Spec.IPFamilies) {
				break
			}
			switch isV6 := netutils.IsIPv6String(ip); {
			case s.Spec.IPFamilies[i] == corev1.IPv4Protocol && isV6:
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv4 value as indicated by `ipFamilies[%v]`", i)))
			case s.Spec.IPFamilies[i] == corev1.IPv6Protocol && !isV6:
				errs = append(errs, field.Invalid(ipsPath.Index(i), ip, fmt.Sprintf("expected an IPv6 value as indicated by `ipFamilies[%v]`", i)))
			}
		}
	}
	return errs
}

// validateLoadBalancerFields: source ranges, allocateLoadBalancerNodePorts
// and loadBalancerClass belong to LoadBalancer services.
func validateLoadBalancerFields(s *corev1.Service, old *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	isLB := s.Spec.Type == corev1.ServiceTypeLoadBalancer
	const onlyLB = "may only be used when `type` is 'LoadBalancer'"
	if len(s.Spec.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("LoadBalancerSourceRanges")
		if !isLB {
			errs = append(errs, field.Forbidden(p, onlyLB))
		}
		for i, r := range s.Spec.LoadBalancerSourceRanges {
			errs = append(errs, validation.IsValidCIDR(p.Index(i), strings.TrimSpace(r))...)
		}
	}
	if s.Spec.AllocateLoadBalancerNodePorts != nil && !isLB {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), onlyLB))
	}
	if isLB && s.Spec.AllocateLoadBalancerNodePorts == nil {
		errs = append(errs, field.Required(specPath.Child("allocateLoadBalancerNodePorts"), ""))
	}
	if old != nil && isLB && old.Spec.Type == corev1.ServiceTypeLoadBalancer && !sameStringPtr(old.Spec.LoadBalancerClass, s.Spec.LoadBalancerClass) {
		errs = append(errs, field.Invalid(specPath.Child("loadBalancerClass"), s.Spec.LoadBalancerClass, "may not change once set"))
	}
	if s.Spec.LoadBalancerClass != nil {
		if isLB {
			errs = append(errs, validateQualifiedName(*s.Spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		} else {
			errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), onlyLB))
		}
	}
	return errs
}

func sameStringPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// validateTrafficPolicies covers externalTrafficPolicy, healthCheckNodePort,
// internalTrafficPolicy and trafficDistribution.
func validateTrafficPolicies(s *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &s.Spec
	etp := specPath.Child("externalTrafficPolicy")
	switch {
	case !externallyAccessible(s):
		if spec.ExternalTrafficPolicy != "" {
			errs = append(errs, field.Invalid(etp, spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		}
	case spec.ExternalTrafficPolicy == "":
		// Defaulting sets Cluster for NodePort and LoadBalancer.
		if spec.Type != corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Required(etp, ""))
		}
	case spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster && spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal:
		errs = append(errs, field.NotSupported(etp, spec.ExternalTrafficPolicy, []corev1.ServiceExternalTrafficPolicy{
			corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}))
	}
	needsHealthCheck := spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	hc := specPath.Child("healthCheckNodePort")
	if !needsHealthCheck && spec.HealthCheckNodePort != 0 {
		errs = append(errs, field.Invalid(hc, spec.HealthCheckNodePort, "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	if needsHealthCheck && spec.HealthCheckNodePort != 0 {
		for _, msg := range validation.IsValidPortNum(int(spec.HealthCheckNodePort)) {
			errs = append(errs, field.Invalid(hc, spec.HealthCheckNodePort, msg))
		}
	}
	itp := specPath.Child("internalTrafficPolicy")
	if spec.InternalTrafficPolicy == nil {
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP {
			errs = append(errs, field.Required(itp, ""))
		}
	} else if p := *spec.InternalTrafficPolicy; p != corev1.ServiceInternalTrafficPolicyCluster && p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(itp, p, []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}))
	}
	if td := spec.TrafficDistribution; td != nil {
		ok := false
		for _, x := range trafficDistributions {
			ok = ok || x == *td
		}
		if !ok {
			errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *td, trafficDistributions))
		}
	}
	return errs
}

// validateServiceUpdate: the primary cluster IP and IP family never change
// (except to, from or on ExternalName); a secondary may be added, or removed
// together with ipFamilyPolicy SingleStack. healthCheckNodePort and
// loadBalancerClass are immutable while they apply.
func (v *Validator) validateServiceUpdate(s, old *corev1.Service) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	ipsPath, famPath := field.NewPath("spec", "clusterIPs"), field.NewPath("spec", "ipFamilies")
	ext := s.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName
	newIPs, oldIPs := serviceClusterIPs(s), serviceClusterIPs(old)
	if !ext && !(isHeadless(s) && isHeadless(old)) {
		switch {
		case len(oldIPs) == len(newIPs):
			for i := range oldIPs {
				if oldIPs[i] != newIPs[i] {
					errs = append(errs, field.Invalid(ipsPath.Index(i), newIPs, "may not change once set"))
				}
			}
		case len(oldIPs) > len(newIPs):
			if len(newIPs) == 0 {
				errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "primary clusterIP can not be unset"))
			} else if newIPs[0] != oldIPs[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
			}
			if len(newIPs) == 1 && !isSingleStack(s) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), s.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
			}
		default:
			if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
				errs = append(errs, field.Invalid(ipsPath.Index(0), newIPs, "may not change once set"))
			}
		}
	}
	if !ext && isHeadless(s) == isHeadless(old) && !isHeadless(s) {
		nf, of := s.Spec.IPFamilies, old.Spec.IPFamilies
		switch {
		case len(of) == len(nf):
			for i := range of {
				if of[i] != nf[i] {
					errs = append(errs, field.Invalid(famPath.Index(0), nf, "may not change once set"))
				}
			}
		case len(of) > len(nf):
			if len(newIPs) == 0 {
				errs = append(errs, field.Invalid(famPath.Index(0), nf, "primary ipFamily can not be unset"))
			}
			if len(nf) > 0 && nf[0] != of[0] {
				errs = append(errs, field.Invalid(famPath.Index(0), newIPs, "may not change once set"))
			}
			if len(nf) == 1 && !isSingleStack(s) {
				errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilyPolicy"), s.Spec.IPFamilyPolicy, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
			}
		default:
			if len(of) > 0 && len(nf) > 0 && nf[0] != of[0] {
				errs = append(errs, field.Invalid(famPath.Index(0), newIPs, "may not change once set"))
			}
		}
	}
	lbLocal := func(x *corev1.Service) bool {
		return x.Spec.Type == corev1.ServiceTypeLoadBalancer && x.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	}
	if lbLocal(s) && lbLocal(old) && s.Spec.HealthCheckNodePort != old.Spec.HealthCheckNodePort {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), fieldImmutableErrorMsg))
	}
	return append(errs, v.validateServiceSpec(s, old)...)
}

func isSingleStack(s *corev1.Service) bool {
	return s.Spec.IPFamilyPolicy != nil && *s.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
}

// validateServiceStatusUpdate validates status.loadBalancer.
func (v *Validator) validateServiceStatusUpdate(s, old *corev1.Service) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	ingPath := field.NewPath("status", "loadBalancer", "ingress")
	if s.Spec.Type != corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) != 0 {
		return append(errs, field.Forbidden(ingPath, "may only be used when `spec.type` is 'LoadBalancer'"))
	}
	for i, ing := range s.Status.LoadBalancer.Ingress {
		p := ingPath.Index(i)
		if ing.IP != "" {
			errs = append(errs, validation.IsValidIP(p.Child("ip"), ing.IP)...)
		}
		if ing.IPMode != nil {
			if ing.IP == "" {
				errs = append(errs, field.Forbidden(p.Child("ipMode"), "may not be specified when `ip` is not set"))
			} else if *ing.IPMode != corev1.LoadBalancerIPModeVIP && *ing.IPMode != corev1.LoadBalancerIPModeProxy {
				errs = append(errs, field.NotSupported(p.Child("ipMode"), *ing.IPMode, []corev1.LoadBalancerIPMode{corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP}))
			}
		}
		if ing.Hostname != "" {
			errs = append(errs, validateDNS1123Subdomain(ing.Hostname, p.Child("hostname"))...)
			if netutils.ParseIPSloppy(ing.Hostname) != nil {
				errs = append(errs, field.Invalid(p.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
	}
	return errs
}
