package validation

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var (
	serviceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	sessionAffinities    = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	trafficDistributions = []string{corev1.ServiceTrafficDistributionPreferClose,
		corev1.ServiceTrafficDistributionPreferSameNode, corev1.ServiceTrafficDistributionPreferSameZone}
)

// serviceClusterIPs returns spec.clusterIPs, or [spec.clusterIP] when only the
// singular field is set (Kubernetes' strategy syncs the two before
// validation).
func serviceClusterIPs(s *corev1.Service) []string {
	if len(s.Spec.ClusterIPs) == 0 && s.Spec.ClusterIP != "" {
		return []string{s.Spec.ClusterIP}
	}
	return s.Spec.ClusterIPs
}

func isHeadless(s *corev1.Service) bool {
	ips := serviceClusterIPs(s)
	return len(ips) == 1 && ips[0] == corev1.ClusterIPNone
}

func externallyAccessible(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort ||
		(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

func (v *Validator) validateService(s *corev1.Service) field.ErrorList {
	return v.validateServiceSpec(s, nil)
}

// validateServiceSpec validates a Service; old (nil on create) lets legacy
// IPs that were already stored pass.
func (v *Validator) validateServiceSpec(s *corev1.Service, old *corev1.Service) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateObjectMeta(&s.ObjectMeta, true, nameIsDNS1035Label, field.NewPath("metadata"))
	spec := &s.Spec
	ips := serviceClusterIPs(s)
	if len(spec.Ports) == 0 && !isHeadless(s) && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadless(s) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), ips[0], fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(ips) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			errs = append(errs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	portNames := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, v.validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, spec.Type, portNames, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, validateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, validateSessionAffinity(spec, specPath)...)
	if spec.Type != corev1.ServiceTypeExternalName {
		var oldIPs []string
		if old != nil {
			oldIPs = serviceClusterIPs(old)
		}
		errs = append(errs, v.validateClusterIPs(s, oldIPs, specPath)...)
	}
	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		var oldExt []string
		if old != nil {
			oldExt = old.Spec.ExternalIPs
		}
		if e := validation.IsValidIPForLegacyField(p, ip, v.opts.strictIPs, oldExt); len(e) != 0 {
			errs = append(errs, e...)
		} else {
			errs = append(errs, validateNonSpecialIP(ip, p)...)
		}
	}
	switch {
	case spec.Type == "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case !containsType(serviceTypes, spec.Type):
		errs = append(errs, field.NotSupported(specPath.Child("type"), spec.Type, serviceTypes))
	}
	errs = append(errs, validateServicePortUniqueness(spec, specPath.Child("ports"))...)
	errs = append(errs, validateLoadBalancerFields(s, old, specPath)...)
	errs = append(errs, validateTrafficPolicies(s, specPath)...)
	return errs
}

func containsType(types []corev1.ServiceType, t corev1.ServiceType) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

func (v *Validator) validateServicePort(sp *corev1.ServicePort, requireName bool, typ corev1.ServiceType, names map[string]bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sp.Name != "" {
		errs = append(errs, validateDNS1123Label(sp.Name, p.Child("name"))...)
		if names[sp.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(p.Child("port"), sp.Port, msg))
	}
	errs = append(errs, validateProtocol(sp.Protocol, p.Child("protocol"))...)
	errs = append(errs, validatePortNumOrName(sp.TargetPort, p.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*sp.AppProtocol, p.Child("appProtocol"))...)
	}
	if sp.NodePort == 0 {
		return errs
	}
	if typ == corev1.ServiceTypeClusterIP {
		return append(errs, field.Forbidden(p.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
	}
	if msgs := validation.IsValidPortNum(int(sp.NodePort)); len(msgs) != 0 {
		for _, msg := range msgs {
			errs = append(errs, field.Invalid(p.Child("nodePort"), sp.NodePort, msg))
		}
	} else if size := v.opts.nodePortSize; size > 0 && (int(sp.NodePort) < v.opts.nodePortBase || int(sp.NodePort) >= v.opts.nodePortBase+size) {
		errs = append(errs, field.Invalid(p.Child("nodePort"), sp.NodePort, fmt.Sprintf(
			"provided port is not in the valid range. The range of valid ports is %d-%d", v.opts.nodePortBase, v.opts.nodePortBase+size-1)))
	}
	return errs
}

// validateServicePortUniqueness: no two ports share protocol and port, or
// protocol and nodePort.
func validateServicePortUniqueness(spec *corev1.ServiceSpec, portsPath *field.Path) field.ErrorList {
	type key struct {
		proto corev1.Protocol
		port  int32
	}
	var errs field.ErrorList
	nodePorts, ports := map[key]bool{}, map[key]bool{}
	for i, sp := range spec.Ports {
		if sp.NodePort != 0 {
			k := key{sp.Protocol, sp.NodePort}
			if nodePorts[k] {
				errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), sp.NodePort))
			}
			nodePorts[k] = true
		}
		k := key{sp.Protocol, sp.Port}
		if ports[k] {
			errs = append(errs, field.Duplicate(portsPath.Index(i), corev1.ServicePort{Protocol: sp.Protocol, Port: sp.Port}))
		}
		ports[k] = true
	}
	return errs
}

func validateSessionAffinity(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	switch spec.SessionAffinity {
	case "":
		return field.ErrorList{field.Required(specPath.Child("sessionAffinity"), "")}
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			return field.ErrorList{field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone))}
		}
	case corev1.ServiceAffinityClientIP:
		p := specPath.Child("sessionAffinityConfig")
		when := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
		cfg := spec.SessionAffinityConfig
		switch {
		case cfg == nil:
			return field.ErrorList{field.Required(p, when)}
		case cfg.ClientIP == nil:
			return field.ErrorList{field.Required(p.Child("clientIP"), when)}
		case cfg.ClientIP.TimeoutSeconds == nil:
			return field.ErrorList{field.Required(p.Child("clientIP", "timeoutSeconds"), when)}
		case *cfg.ClientIP.TimeoutSeconds <= 0 || *cfg.ClientIP.TimeoutSeconds > maxClientIPServiceAffinitySeconds:
			return field.ErrorList{field.Invalid(p.Child("clientIP", "timeoutSeconds"), cfg.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds))}
		}
	default:
		return field.ErrorList{field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, sessionAffinities)}
	}
	return nil
}

// validateNonSpecialIP rejects unspecified, loopback and link-local
// addresses for endpoints and external IPs.
func validateNonSpecialIP(ip string, fldPath *field.Path) field.ErrorList {
	parsed := netutils.ParseIPSloppy(ip)
	if parsed == nil {
		return field.ErrorList{field.Invalid(fldPath, ip, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if parsed.IsUnspecified() {
		errs = append(errs, field.Invalid(fldPath, ip, fmt.Sprintf("may not be unspecified (%v)", ip)))
	}
	if parsed.IsLoopback() {
		errs = append(errs, field.Invalid(fldPath, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if parsed.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fldPath, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if parsed.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fldPath, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func parseIPSloppy(s string) net.IP { return netutils.ParseIPSloppy(s) }

// maxClientIPServiceAffinitySeconds is the longest ClientIP affinity
// timeout: one day.
const maxClientIPServiceAffinitySeconds = 86400
