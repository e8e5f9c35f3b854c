package validation

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateEndpoints validates Endpoints; old (nil on create) lets stored
// legacy-format IPs pass on update.
func (v *Validator) validateEndpoints(ep *corev1.Endpoints, old *corev1.Endpoints) field.ErrorList {
	errs := validateObjectMeta(&ep.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	var oldIPs []string
	if old != nil {
		for _, ss := range old.Subsets {
			for _, a := range append(append([]corev1.EndpointAddress{}, ss.Addresses...), ss.NotReadyAddresses...) {
				oldIPs = append(oldIPs, a.IP)
			}
		}
	}
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, v.validateEndpointAddress(&ss.Addresses[j], oldIPs, p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, v.validateEndpointAddress(&ss.NotReadyAddresses[j], oldIPs, p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func (v *Validator) validateEndpointsUpdate(ep, old *corev1.Endpoints) field.ErrorList {
	errs := validateObjectMetaUpdate(&ep.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, v.validateEndpoints(ep, old)...)
}

func (v *Validator) validateEndpointAddress(a *corev1.EndpointAddress, oldIPs []string, p *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(p.Child("ip"), a.IP, v.opts.strictIPs, oldIPs)
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, p.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateName(nameIsDNSSubdomain, *a.NodeName, p.Child("nodeName"))...)
	}
	if len(errs) == 0 {
		errs = append(errs, validateNonSpecialIP(a.IP, p.Child("ip"))...)
	}
	return errs
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, validateDNS1123Label(port.Name, p.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(p.Child("port"), port.Port, msg))
	}
	errs = append(errs, validateProtocol(port.Protocol, p.Child("protocol"))...)
	if port.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
	}
	return errs
}

// EndpointSlice limits, as in Kubernetes.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
	maxZoneHints      = 8
)

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// validateEndpointSlice: a known addressType, addresses of that type, valid
// and uniquely named ports.
func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateObjectMeta(&es.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	case "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), es.AddressType, addressTypes))
	}
	errs = append(errs, validateSliceEndpoints(es.Endpoints, es.AddressType, field.NewPath("endpoints"))...)
	return append(errs, validateSlicePorts(es.Ports, field.NewPath("ports"))...)
}

func validateEndpointSliceUpdate(es, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := validateObjectMetaUpdate(&es.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateEndpointSlice(es)...)
	return append(errs, validateImmutable(es.AddressType, old.AddressType, field.NewPath("addressType"))...)
}

func validateSliceEndpoints(eps []discoveryv1.Endpoint, at discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	if len(eps) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(fldPath, len(eps), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range eps {
		p := fldPath.Index(i)
		ap := p.Child("addresses")
		if len(ep.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		} else if len(ep.Addresses) > maxSliceAddresses {
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxSliceAddresses))
		}
		for j, addr := range ep.Addresses {
			errs = append(errs, validateSliceAddress(addr, at, ap.Index(j))...)
		}
		if ep.NodeName != nil {
			errs = append(errs, validateName(nameIsDNSSubdomain, *ep.NodeName, p.Child("nodeName"))...)
		}
		if ep.Hostname != nil {
			errs = append(errs, validateDNS1123Label(*ep.Hostname, p.Child("hostname"))...)
		}
		if len(ep.DeprecatedTopology) > 16 {
			errs = append(errs, field.TooMany(p.Child("deprecatedTopology"), len(ep.DeprecatedTopology), 16))
		}
		errs = append(errs, validateLabels(ep.DeprecatedTopology, p.Child("deprecatedTopology"))...)
		if ep.Hints != nil {
			errs = append(errs, validateSliceHints(ep.Hints, p.Child("hints"))...)
		}
	}
	return errs
}

func validateSliceAddress(addr string, at discoveryv1.AddressType, p *field.Path) field.ErrorList {
	switch at {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		errs := validation.IsValidIPForLegacyField(p, addr, false, nil)
		if len(errs) != 0 {
			return errs
		}
		parsed := parseIPSloppy(addr)
		if at == discoveryv1.AddressTypeIPv4 && parsed.To4() == nil {
			return field.ErrorList{field.Invalid(p, addr, "must be a valid IPv4 address")}
		}
		if at == discoveryv1.AddressTypeIPv6 && parsed.To4() != nil {
			return field.ErrorList{field.Invalid(p, addr, "must be a valid IPv6 address")}
		}
		return validateNonSpecialIP(addr, p)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(p, addr)
	}
	return nil
}

func validateSliceHints(h *discoveryv1.EndpointHints, p *field.Path) field.ErrorList {
	fz := p.Child("forZones")
	if len(h.ForZones) > maxZoneHints {
		return field.ErrorList{field.TooMany(fz, len(h.ForZones), maxZoneHints)}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, z := range h.ForZones {
		zp := fz.Index(i).Child("name")
		if seen[z.Name] {
			errs = append(errs, field.Duplicate(zp, z.Name))
		}
		seen[z.Name] = true
		for _, msg := range validation.IsValidLabelValue(z.Name) {
			errs = append(errs, field.Invalid(zp, z.Name, msg))
		}
	}
	return errs
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := fldPath.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			errs = append(errs, validateDNS1123Label(name, p.Child("name"))...)
		}
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.Port != nil {
			for _, msg := range validation.IsValidPortNum(int(*port.Port)) {
				errs = append(errs, field.Invalid(p.Child("port"), *port.Port, msg))
			}
		}
		if port.AppProtocol != nil {
			errs = append(errs, validateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}
