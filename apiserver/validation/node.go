package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// nodePodCIDRs returns the node's pod CIDRs and the path to report them at:
// spec.podCIDRs when set, else the single spec.podCIDR (v1 keeps both; the
// first of podCIDRs is authoritative, as in Kubernetes' conversion).
func nodePodCIDRs(spec *corev1.NodeSpec) ([]string, *field.Path) {
	if len(spec.PodCIDRs) > 0 {
		return spec.PodCIDRs, field.NewPath("spec", "podCIDRs")
	}
	if spec.PodCIDR != "" {
		return []string{spec.PodCIDR}, field.NewPath("spec", "podCIDR")
	}
	return nil, field.NewPath("spec", "podCIDRs")
}

func (v *Validator) validateNode(node *corev1.Node) field.ErrorList {
	errs := validateObjectMeta(&node.ObjectMeta, false, nameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateNodeTaints(node.Spec.Taints, field.NewPath("spec", "taints"))...)
	errs = append(errs, validateNodeResources(node)...)
	cidrs, p := nodePodCIDRs(&node.Spec)
	return append(errs, v.validatePodCIDRs(cidrs, nil, p)...)
}

// validatePodCIDRs: valid CIDRs, at most one per family, no duplicates.
func (v *Validator) validatePodCIDRs(cidrs, old []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	single := fldPath.String() == "spec.podCIDR"
	for i, c := range cidrs {
		p := fldPath.Index(i)
		if single {
			p = fldPath
		}
		errs = append(errs, validation.IsValidCIDRForLegacyField(p, c, v.opts.strictIPs, old)...)
	}
	if len(cidrs) < 2 || len(errs) > 0 {
		return errs
	}
	if dual, err := netutils.IsDualStackCIDRStrings(cidrs); err != nil || !dual || len(cidrs) > 2 {
		errs = append(errs, field.Invalid(fldPath, cidrs, "may specify no more than one CIDR for each IP family"))
	}
	seen := map[string]bool{}
	for i, c := range cidrs {
		if seen[c] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), c))
		}
		seen[c] = true
	}
	return errs
}

// validateNodeTaints: valid keys and values, known effects, unique per
// key and effect.
func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]map[string]bool{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		if seen[t.Effect][t.Key] {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = map[string]bool{}
		}
		seen[t.Effect][t.Key] = true
	}
	return errs
}

func validateNodeResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(node.Status.Capacity) {
		errs = append(errs, validateResourceQuantity(name, node.Status.Capacity[name], field.NewPath("status", "capacity", string(name)))...)
	}
	for _, name := range sortedResourceNames(node.Status.Allocatable) {
		errs = append(errs, validateResourceQuantity(name, node.Status.Allocatable[name], field.NewPath("status", "allocatable", string(name)))...)
	}
	return errs
}

// validateNodeUpdate is used for updates of the main resource and of the
// status subresource, as in Kubernetes: podCIDRs and providerID may only go
// from unset to set, externalID never changes, addresses are unique.
func (v *Validator) validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	errs := validateObjectMetaUpdate(&node.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	cidrs, p := nodePodCIDRs(&node.Spec)
	oldCIDRs, _ := nodePodCIDRs(&old.Spec)
	errs = append(errs, v.validatePodCIDRs(cidrs, oldCIDRs, p)...)
	if len(oldCIDRs) > 0 && !equalStrings(oldCIDRs, cidrs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), `node updates may not change podCIDR except from "" to valid`))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), `node updates may not change providerID except from "" to valid`))
	}
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return append(errs, validateNodeTaints(node.Spec.Taints, field.NewPath("spec", "taints"))...)
}

func equalStrings(a, b []string) bool {
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

// validateNamespace: a DNS-label name and standard or qualified finalizers.
func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	errs := validateObjectMeta(&ns.ObjectMeta, false, nameIsDNSLabel, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

func validateNamespaceUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// validateNamespaceStatusUpdate: the phase is Active until deletion starts,
// then Terminating.
func validateNamespaceStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := validateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}
