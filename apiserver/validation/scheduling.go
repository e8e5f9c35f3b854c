package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(t.Weight, tp.Child("weight"))...)
			// Preferred terms tolerate invalid label values, as in Kubernetes.
			errs = append(errs, validateNodeSelectorTerm(t.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := fldPath.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := fldPath.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return errs
}

func validateWeight(w int32, p *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(p, w, "must be in the range 1-100")}
	}
	return nil
}

func validateNodeSelector(ns *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, t := range ns.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(t, false, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, r := range t.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(r, allowInvalidValues, fldPath.Child("matchExpressions").Index(j))...)
	}
	for j, r := range t.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
		} else {
			for k, val := range r.Values {
				errs = append(errs, validateName(nameIsDNSSubdomain, val, p.Child("values").Index(k))...)
			}
		}
	}
	return errs
}

// validateNodeSelectorRequirement: In/NotIn need values, Exists/DoesNotExist
// take none, Gt/Lt exactly one integer.
func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, allowInvalidValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		} else if !isInteger(r.Values[0]) {
			errs = append(errs, field.Invalid(fldPath.Child("values").Index(0), r.Values[0], "must be an integer when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metav1validation.ValidateLabelName(r.Key, fldPath.Child("key"))...)
	if !allowInvalidValues {
		for i, val := range r.Values {
			for _, msg := range validation.IsValidLabelValue(val) {
				errs = append(errs, field.Invalid(fldPath.Child("values").Index(i), val, msg))
			}
		}
	}
	return errs
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 19 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		errs = append(errs, validatePodAffinityTerm(t, fldPath.Index(i))...)
	}
	return errs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range terms {
		errs = append(errs, validateWeight(t.Weight, fldPath.Index(i).Child("weight"))...)
		errs = append(errs, validatePodAffinityTerm(t.PodAffinityTerm, fldPath.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		errs = append(errs, validateName(nameIsDNSLabel, ns, fldPath.Child("namespace"))...)
	}
	errs = append(errs, validateLabelKeys(t.MatchLabelKeys, t.LabelSelector, fldPath.Child("matchLabelKeys"))...)
	errs = append(errs, validateLabelKeys(t.MismatchLabelKeys, t.LabelSelector, fldPath.Child("mismatchLabelKeys"))...)
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
}

func validateLabelKeys(keys []string, sel *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if sel == nil {
		return field.ErrorList{field.Forbidden(fldPath, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, fldPath.Index(i))...)
	}
	return errs
}

// validateTolerations: Exists takes no value, an empty key needs Exists,
// tolerationSeconds only with NoExecute, known effects.
func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
	}
	return errs
}

func validateTaintEffect(e corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, e, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})}
	}
}

func validateTopologySpreadConstraints(cs []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, rest := range cs[i+1:] {
			if rest.TopologyKey == c.TopologyKey && rest.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains, isNotPositiveErrorMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		errs = append(errs, validateNodeInclusionPolicy(c.NodeAffinityPolicy, p.Child("nodeAffinityPolicy"))...)
		errs = append(errs, validateNodeInclusionPolicy(c.NodeTaintsPolicy, p.Child("nodeTaintsPolicy"))...)
		if len(c.MatchLabelKeys) > 0 && c.LabelSelector == nil {
			errs = append(errs, field.Forbidden(p.Child("matchLabelKeys"), "must not be specified when labelSelector is not set"))
		}
		for j, k := range c.MatchLabelKeys {
			errs = append(errs, metav1validation.ValidateLabelName(k, p.Child("matchLabelKeys").Index(j))...)
		}
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return errs
}

func validateNodeInclusionPolicy(pol *corev1.NodeInclusionPolicy, p *field.Path) field.ErrorList {
	if pol != nil && *pol != corev1.NodeInclusionPolicyHonor && *pol != corev1.NodeInclusionPolicyIgnore {
		return field.ErrorList{field.NotSupported(p, *pol, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore})}
	}
	return nil
}

const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validatePodDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateHostAliases(aliases []corev1.HostAlias, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range aliases {
		errs = append(errs, validation.IsValidIP(fldPath.Index(i).Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(h, fldPath.Index(i).Child("hostnames").Index(j))...)
		}
	}
	return errs
}

func validateReadinessGates(gates []corev1.PodReadinessGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, g := range gates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), fldPath.Index(i).Child("conditionType"))...)
	}
	return errs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, g := range gates {
		errs = append(errs, validateQualifiedName(g.Name, fldPath.Index(i))...)
		if seen[g.Name] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), g.Name))
		}
		seen[g.Name] = true
	}
	return errs
}
