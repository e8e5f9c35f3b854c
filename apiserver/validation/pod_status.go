package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

var podPhases = []corev1.PodPhase{corev1.PodFailed, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodUnknown}

var conditionStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}

// systemPodConditions need not be qualified names.
var systemPodConditions = map[corev1.PodConditionType]bool{corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true}

func isTerminalPhase(p corev1.PodPhase) bool {
	return p == corev1.PodSucceeded || p == corev1.PodFailed
}

// validatePodStatusUpdate validates a status-subresource update: phase values
// and the terminal-phase rule, conditions, container statuses naming
// containers of the spec, container state transitions, pod and host IPs, and
// the fields the status subresource may not change (nodeName, qosClass).
func (v *Validator) validatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	metaPath, statusPath := field.NewPath("metadata"), field.NewPath("status")
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, validatePodAnnotationUpdates(pod, old, metaPath.Child("annotations"))...)

	st := &pod.Status
	switch {
	case st.Phase == "":
	case !isPodPhase(st.Phase):
		errs = append(errs, field.NotSupported(statusPath.Child("phase"), st.Phase, podPhases))
	case isTerminalPhase(old.Status.Phase) && st.Phase != old.Status.Phase:
		errs = append(errs, field.Forbidden(statusPath.Child("phase"),
			fmt.Sprintf("may not be changed from terminal phase %s to %s", old.Status.Phase, st.Phase)))
	}
	if isTerminalPhase(old.Status.Phase) && st.Phase == "" {
		errs = append(errs, field.Forbidden(statusPath.Child("phase"), fmt.Sprintf("may not be changed from terminal phase %s to %q", old.Status.Phase, "")))
	}
	errs = append(errs, validatePodConditions(st.Conditions, statusPath.Child("conditions"))...)
	if pod.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if st.NominatedNodeName != old.Status.NominatedNodeName && st.NominatedNodeName != "" {
		errs = append(errs, validateName(nameIsDNSSubdomain, st.NominatedNodeName, statusPath.Child("nominatedNodeName"))...)
	}
	errs = append(errs, validateImmutable(st.QOSClass, old.Status.QOSClass, statusPath.Child("qosClass"))...)

	errs = append(errs, validateContainerStatusNames(st.ContainerStatuses, pod.Spec.Containers, statusPath.Child("containerStatuses"))...)
	errs = append(errs, validateContainerStatusNames(st.InitContainerStatuses, pod.Spec.InitContainers, statusPath.Child("initContainerStatuses"))...)
	ephemeral := make([]corev1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		ephemeral[i] = corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	errs = append(errs, validateContainerStatusNames(st.EphemeralContainerStatuses, ephemeral, statusPath.Child("ephemeralContainerStatuses"))...)

	errs = append(errs, validateContainerStateTransition(st.ContainerStatuses, old.Status.ContainerStatuses, statusPath.Child("containerStatuses"), old.Spec.RestartPolicy, nil)...)
	errs = append(errs, validateContainerStateTransition(st.InitContainerStatuses, old.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), old.Spec.RestartPolicy, old.Spec.InitContainers)...)
	errs = append(errs, validateContainerStateTransition(st.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)

	oldPodIPs := make([]string, 0, len(old.Status.PodIPs))
	for _, ip := range old.Status.PodIPs {
		oldPodIPs = append(oldPodIPs, ip.IP)
	}
	errs = append(errs, v.validateIPList(podIPStrings(st.PodIPs), oldPodIPs, statusPath.Child("podIPs"))...)
	if len(st.HostIPs) > 0 && st.HostIP != st.HostIPs[0].IP {
		errs = append(errs, field.Invalid(statusPath.Child("hostIPs").Index(0).Child("ip"), st.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	hostIPs := make([]string, 0, len(st.HostIPs))
	for _, ip := range st.HostIPs {
		hostIPs = append(hostIPs, ip.IP)
	}
	oldHostIPs := make([]string, 0, len(old.Status.HostIPs))
	for _, ip := range old.Status.HostIPs {
		oldHostIPs = append(oldHostIPs, ip.IP)
	}
	return append(errs, v.validateIPList(hostIPs, oldHostIPs, statusPath.Child("hostIPs"))...)
}

func isPodPhase(p corev1.PodPhase) bool {
	for _, ok := range podPhases {
		if p == ok {
			return true
		}
	}
	return false
}

func podIPStrings(ips []corev1.PodIP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.IP)
	}
	return out
}

func validatePodConditions(conds []corev1.PodCondition, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range conds {
		p := fldPath.Index(i)
		switch {
		case c.Type == "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		case !systemPodConditions[c.Type]:
			errs = append(errs, validateQualifiedName(string(c.Type), p.Child("type"))...)
		}
		switch c.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			errs = append(errs, field.Required(p.Child("status"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("status"), c.Status, conditionStatuses))
		}
	}
	return errs
}

// validateContainerStatusNames: every status names a container of the spec,
// once.
func validateContainerStatusNames(statuses []corev1.ContainerStatus, containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	names := map[string]bool{}
	for _, c := range containers {
		names[c.Name] = true
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, s := range statuses {
		p := fldPath.Index(i).Child("name")
		switch {
		case !names[s.Name]:
			errs = append(errs, field.NotFound(p, s.Name))
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen[s.Name] = true
	}
	return errs
}

// validateContainerStateTransition: unless the pod restarts containers, a
// terminated container stays terminated. inits, when given, are the init
// containers: sidecars may always restart.
func validateContainerStateTransition(statuses, old []corev1.ContainerStatus, fldPath *field.Path, policy corev1.RestartPolicy, inits []corev1.Container) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) {
			continue
		}
		if isSidecar(o.Name, inits) {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

func isSidecar(name string, inits []corev1.Container) bool {
	for _, c := range inits {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// validateIPList validates a list of IPs: each valid, at most one per family,
// no duplicates. Values already in old are accepted even if non-canonical.
func (v *Validator) validateIPList(ips, old []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	valid := true
	for i, ip := range ips {
		e := validation.IsValidIPForLegacyField(fldPath.Index(i), ip, v.opts.strictIPs, old)
		valid = valid && len(e) == 0
		errs = append(errs, e...)
	}
	if len(ips) < 2 || !valid {
		return errs
	}
	seen := map[string]bool{}
	v4, v6 := 0, 0
	for i, ip := range ips {
		if seen[ip] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), ip))
		}
		seen[ip] = true
		if parsed := netutils.ParseIPSloppy(ip); parsed != nil && parsed.To4() != nil {
			v4++
		} else {
			v6++
		}
	}
	if len(ips) > 2 || v4 != 1 || v6 != 1 {
		errs = append(errs, field.Invalid(fldPath, ips, "may specify no more than one IP for each IP family"))
	}
	return errs
}

// validateBinding validates a pods/binding request: the target must name a
// node.
func validateBinding(b *corev1.Binding) field.ErrorList {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	return errs
}

// ValidateEphemeralContainersUpdate validates an update through the
// pods/ephemeralcontainers subresource: ephemeral containers may be added,
// never removed or changed, and not on static (mirror) pods. As in
// Kubernetes, the caller copies every other spec field from old first.
func (v *Validator) ValidateEphemeralContainersUpdate(pod, old *corev1.Pod) field.ErrorList {
	return dedupe(v.validateEphemeralContainersUpdate(pod, old))
}

func (v *Validator) validateEphemeralContainersUpdate(pod, old *corev1.Pod) field.ErrorList {
	if errs := checkPair(pod, old); errs != nil {
		return errs
	}
	metaPath := field.NewPath("metadata")
	errs := validateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, v.validatePodMetaAndSpec(pod)...)
	errs = append(errs, validatePodAnnotationUpdates(pod, old, metaPath.Child("annotations"))...)
	if _, ok := old.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range pod.Spec.EphemeralContainers {
		byName[pod.Spec.EphemeralContainers[i].Name] = &pod.Spec.EphemeralContainers[i]
	}
	for _, o := range old.Spec.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%s", o.Name, specDiff(o, *n))))
		}
	}
	return errs
}
