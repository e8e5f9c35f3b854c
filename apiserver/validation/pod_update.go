package validation

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is the list Kubernetes prints when a pod update
// changes anything else.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// podUpdateForbiddenMsg is the first sentence of the error for a pod update
// that changes an immutable spec field.
var podUpdateForbiddenMsg = "pod updates may not change fields other than " + strings.Join(updatablePodSpecFields, ",")

// validatePodUpdate: the spec is immutable except container images,
// activeDeadlineSeconds (set or shortened), tolerations (additions),
// terminationGracePeriodSeconds (negative to 1), scheduling gates (removal)
// and, while gated, additions to nodeSelector and node affinity. nodeName is
// therefore set only through the binding subresource.
func (v *Validator) validatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, v.validatePodMetaAndSpec(pod)...)
	errs = append(errs, validatePodAnnotationUpdates(pod, old, metaPath.Child("annotations"))...)

	cErrs, stop := validateContainerUpdates(pod.Spec.Containers, old.Spec.Containers, specPath.Child("containers"))
	if errs = append(errs, cErrs...); stop {
		return errs
	}
	cErrs, stop = validateContainerUpdates(pod.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"))
	if errs = append(errs, cErrs...); stop {
		return errs
	}

	adsPath := specPath.Child("activeDeadlineSeconds")
	if pod.Spec.ActiveDeadlineSeconds != nil {
		n := *pod.Spec.ActiveDeadlineSeconds
		if n < 0 || n > math.MaxInt32 {
			return append(errs, field.Invalid(adsPath, n, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old.Spec.ActiveDeadlineSeconds != nil && *old.Spec.ActiveDeadlineSeconds < n {
			return append(errs, field.Invalid(adsPath, n, "must be less than or equal to previous value"))
		}
	} else if old.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(adsPath, pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		return errs
	}
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = old.Spec.SchedulingGates
	munged.Tolerations = old.Spec.Tolerations
	if g, og := munged.TerminationGracePeriodSeconds, old.Spec.TerminationGracePeriodSeconds; og != nil && *og < 0 && g != nil && *g == 1 {
		munged.TerminationGracePeriodSeconds = og
	}
	if len(old.Spec.SchedulingGates) > 0 {
		errs = append(errs, mungeGatedPodScheduling(munged, &old.Spec, specPath)...)
	}
	if !equality.Semantic.DeepEqual(*munged, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, podUpdateForbiddenMsg+"\n"+specDiff(old.Spec, *munged)))
	}
	return errs
}

// validateContainerUpdates: the container list may not grow or shrink
// (images are checked by the spec validation). stop is true when the lists
// differ in length.
func validateContainerUpdates(cs, old []corev1.Container, fldPath *field.Path) (errs field.ErrorList, stop bool) {
	if len(cs) != len(old) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	return nil, false
}

func validatePodAnnotationUpdates(pod, old *corev1.Pod, fldPath *field.Path) field.ErrorList {
	newVal, newOK := pod.Annotations[mirrorPodAnnotation]
	oldVal, oldOK := old.Annotations[mirrorPodAnnotation]
	switch {
	case oldOK && (!newOK || newVal != oldVal):
		return field.ErrorList{field.Forbidden(fldPath.Key(mirrorPodAnnotation), "may not remove or update mirror pod annotation")}
	case newOK && !oldOK:
		return field.ErrorList{field.Forbidden(fldPath.Key(mirrorPodAnnotation), "may not add mirror pod annotation")}
	}
	return nil
}

// validateOnlyAddedTolerations: existing tolerations stay (their
// tolerationSeconds may change), new ones may be added.
func validateOnlyAddedTolerations(tols, old []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tols {
			oc := o
			oc.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(oc, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateOnlyDeletedSchedulingGates(gates, old []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	oldNames := map[string]bool{}
	for _, g := range old {
		oldNames[g.Name] = true
	}
	var errs field.ErrorList
	for i, g := range gates {
		if !oldNames[g.Name] {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// mungeGatedPodScheduling allows a gated pod's nodeSelector and required node
// affinity to gain entries (never lose or change them), copying the old
// values into munged once checked.
func mungeGatedPodScheduling(munged, old *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !equality.Semantic.DeepEqual(munged.NodeSelector, old.NodeSelector) {
		for k, ov := range old.NodeSelector {
			if nv, ok := munged.NodeSelector[k]; !ok || nv != ov {
				errs = append(errs, field.Invalid(specPath.Child("nodeSelector"), munged.NodeSelector, "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
				break
			}
		}
		munged.NodeSelector = old.NodeSelector
	}
	var oldNA, newNA *corev1.NodeAffinity
	if old.Affinity != nil {
		oldNA = old.Affinity.NodeAffinity
	}
	if munged.Affinity != nil {
		newNA = munged.Affinity.NodeAffinity
	}
	if equality.Semantic.DeepEqual(oldNA, newNA) {
		return errs
	}
	errs = append(errs, validateNodeAffinityAdditions(specPath.Child("affinity", "nodeAffinity"), newNA, oldNA)...)
	switch {
	case munged.Affinity == nil:
		munged.Affinity = &corev1.Affinity{NodeAffinity: oldNA}
	case old.Affinity == nil && munged.Affinity.PodAffinity == nil && munged.Affinity.PodAntiAffinity == nil:
		munged.Affinity = nil
	default:
		munged.Affinity.NodeAffinity = oldNA
	}
	return errs
}

func validateNodeAffinityAdditions(p *field.Path, newNA, oldNA *corev1.NodeAffinity) field.ErrorList {
	if oldNA == nil || oldNA.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	oldTerms := oldNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var newTerms []corev1.NodeSelectorTerm
	if newNA != nil && newNA.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		newTerms = newNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	termsPath := p.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	if len(oldTerms) > 0 && len(oldTerms) != len(newTerms) {
		return field.ErrorList{field.Invalid(termsPath, newTerms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")}
	}
	var errs field.ErrorList
	for i := range oldTerms {
		o, n := oldTerms[i], newTerms[i]
		ok := len(n.MatchExpressions) >= len(o.MatchExpressions) && len(n.MatchFields) >= len(o.MatchFields) &&
			equality.Semantic.DeepEqual(n.MatchExpressions[:len(o.MatchExpressions)], o.MatchExpressions) &&
			equality.Semantic.DeepEqual(n.MatchFields[:len(o.MatchFields)], o.MatchFields)
		if len(o.MatchExpressions) == 0 && len(o.MatchFields) == 0 && (len(n.MatchExpressions) > 0 || len(n.MatchFields) > 0) {
			ok = false
		}
		if !ok {
			errs = append(errs, field.Invalid(termsPath.Index(i), n, "only additions are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

// specDiff lists the JSON paths that differ between two values, old and new
// value on each line, like a compact diff. At most maxDiffLines are shown.
func specDiff(old, cur any) string {
	var a, b any
	if ja, err := json.Marshal(old); err == nil {
		_ = json.Unmarshal(ja, &a)
	}
	if jb, err := json.Marshal(cur); err == nil {
		_ = json.Unmarshal(jb, &b)
	}
	var lines []string
	diffJSON("spec", a, b, &lines)
	if len(lines) > maxDiffLines {
		lines = append(lines[:maxDiffLines], fmt.Sprintf("  ... (%d more)", len(lines)-maxDiffLines))
	}
	return strings.Join(lines, "\n")
}

const maxDiffLines = 20

func diffJSON(path string, a, b any, out *[]string) {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diffJSON(path+"."+k, am[k], bm[k], out)
		}
		return
	}
	as, aIsList := a.([]any)
	bs, bIsList := b.([]any)
	if aIsList && bIsList && len(as) == len(bs) {
		for i := range as {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i], out)
		}
		return
	}
	if reflect.DeepEqual(a, b) {
		return
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	*out = append(*out, fmt.Sprintf("  %s: %s -> %s", path, ja, jb))
}
