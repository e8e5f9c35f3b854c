package validation

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	mirrorPodAnnotation       = "kubernetes.io/config.mirror"
	podDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
)

// podOpts carries what differs between a Pod and a pod template.
type podOpts struct {
	// resourceIsPod is true for a Pod, false for a PodSpec embedded in a
	// workload: pods get stricter image and hostPort checks.
	resourceIsPod bool
}

func (v *Validator) validatePodCreate(pod *corev1.Pod) field.ErrorList {
	errs := v.validatePodMetaAndSpec(pod)
	specPath := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// validatePodMetaAndSpec validates a pod's metadata and spec, shared by create
// and update.
func (v *Validator) validatePodMetaAndSpec(pod *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := validateObjectMeta(&pod.ObjectMeta, true, nameIsDNSSubdomain, metaPath)
	errs = append(errs, validatePodAnnotations(pod.Annotations, &pod.Spec, metaPath.Child("annotations"))...)
	errs = append(errs, v.validatePodSpec(&pod.Spec, &pod.ObjectMeta, specPath, podOpts{resourceIsPod: true})...)
	if pod.Spec.ServiceAccountName == "" {
		for vi, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					p := specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken")
					errs = append(errs, field.Forbidden(p, "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	return errs
}

// validatePodAnnotations checks the annotations Kubernetes gives meaning to.
func validatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value, ok := annotations[mirrorPodAnnotation]; ok && spec.NodeName == "" {
		errs = append(errs, field.Invalid(fldPath.Key(mirrorPodAnnotation), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if value, ok := annotations[podDeletionCostAnnotation]; ok {
		if _, err := strconv.ParseInt(value, 10, 32); err != nil {
			errs = append(errs, field.Invalid(fldPath.Key(podDeletionCostAnnotation), value, "must be a 32bit integer"))
		}
	}
	return errs
}

// validatePodTemplateSpec validates a pod template embedded in a workload.
func (v *Validator) validatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := validateTemplateMeta(&t.ObjectMeta, fldPath.Child("metadata"))
	errs = append(errs, validatePodAnnotations(t.Annotations, &t.Spec, fldPath.Child("metadata", "annotations"))...)
	errs = append(errs, v.validatePodSpec(&t.Spec, nil, fldPath.Child("spec"), podOpts{})...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validatePodSpec validates a PodSpec. podMeta is nil for templates.
func (v *Validator) validatePodSpec(spec *corev1.PodSpec, podMeta *metav1.ObjectMeta, fldPath *field.Path, opts podOpts) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	grace := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	vols, volErrs := validateVolumes(spec.Volumes, podMeta, fldPath.Child("volumes"), opts)
	errs = append(errs, volErrs...)
	claims, claimErrs := validatePodResourceClaims(spec.ResourceClaims, fldPath.Child("resourceClaims"))
	errs = append(errs, claimErrs...)
	windows := spec.OS != nil && spec.OS.Name == corev1.Windows
	cc := containerContext{vols: vols, claims: claims, grace: grace, hostUsers: hostUsers, windows: windows, opts: opts, v: v}
	errs = append(errs, cc.validateContainers(spec.Containers, fldPath.Child("containers"))...)
	errs = append(errs, cc.validateInitContainers(spec.InitContainers, spec.Containers, fldPath.Child("initContainers"))...)
	errs = append(errs, cc.validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, fldPath.Child("ephemeralContainers"))...)
	if spec.Resources != nil {
		errs = append(errs, validatePodResources(spec, claims, fldPath)...)
	}

	errs = append(errs, validateHostNetworkPorts(spec, fldPath, opts)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fldPath.Child("dnsPolicy"))...)
	errs = append(errs, validateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath, fldPath.Child("securityContext"))...)
	errs = append(errs, validateImagePullSecrets(spec.ImagePullSecrets, fldPath.Child("imagePullSecrets"))...)
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	errs = append(errs, validateReadinessGates(spec.ReadinessGates, fldPath.Child("readinessGates"))...)
	errs = append(errs, validateSchedulingGates(spec.SchedulingGates, fldPath.Child("schedulingGates"))...)
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	errs = append(errs, validateHostUsers(spec, fldPath)...)

	if spec.ServiceAccountName != "" {
		errs = append(errs, validateName(nameIsDNSSubdomain, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateName(nameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if d := *spec.ActiveDeadlineSeconds; d < 1 || d > math.MaxInt32 {
			errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), d, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	errs = append(errs, validateHostAliases(spec.HostAliases, fldPath.Child("hostAliases"))...)
	if spec.PriorityClassName != "" {
		errs = append(errs, validateName(nameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, validateName(nameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		errs = append(errs, validatePreemptionPolicy(*spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"))...)
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, validateContainerResourceName, nil, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		errs = append(errs, validatePodOS(spec, fldPath)...)
	}
	return errs
}

func validateRestartPolicy(p corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	}
}

func validateDNSPolicy(p corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})}
	}
}

func validatePreemptionPolicy(p corev1.PreemptionPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case corev1.PreemptLowerPriority, corev1.PreemptNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})}
	}
}

// validateHostNetworkPorts: with hostNetwork, a pod's hostPort must equal its
// containerPort (templates may leave it 0, it is defaulted later).
func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path, opts podOpts) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if hp, cp := port.HostPort, port.ContainerPort; (opts.resourceIsPod || hp != 0) && hp != cp {
				p := fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort")
				errs = append(errs, field.Invalid(p, port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

func validateImagePullSecrets(secrets []corev1.LocalObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range secrets {
		if s.Name == "" {
			errs = append(errs, field.Required(fldPath.Index(i).Child("name"), ""))
		}
	}
	return errs
}

func validateHostUsers(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostUsers == nil || *spec.HostUsers {
		return nil
	}
	var errs field.ErrorList
	if spec.HostNetwork {
		errs = append(errs, field.Forbidden(fldPath.Child("hostNetwork"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostPID {
		errs = append(errs, field.Forbidden(fldPath.Child("HostPID"), "when `pod.Spec.HostUsers` is false"))
	}
	if spec.HostIPC {
		errs = append(errs, field.Forbidden(fldPath.Child("HostIPC"), "when `pod.Spec.HostUsers` is false"))
	}
	return errs
}

func validatePodOS(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	osPath := fldPath.Child("os")
	switch spec.OS.Name {
	case "":
		return field.ErrorList{field.Required(osPath.Child("name"), "cannot be empty")}
	case corev1.Linux:
		var errs field.ErrorList
		if spec.SecurityContext != nil && spec.SecurityContext.WindowsOptions != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
		}
		visitContainers(spec, fldPath, func(c *corev1.Container, p *field.Path) {
			if c.SecurityContext != nil && c.SecurityContext.WindowsOptions != nil {
				errs = append(errs, field.Forbidden(p.Child("securityContext", "windowsOptions"), "windows options cannot be set for a linux pod"))
			}
		})
		return errs
	case corev1.Windows:
		return nil
	default:
		return field.ErrorList{field.NotSupported(osPath, spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows})}
	}
}

// visitContainers calls fn for every init, regular and ephemeral container.
func visitContainers(spec *corev1.PodSpec, fldPath *field.Path, fn func(c *corev1.Container, p *field.Path)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], fldPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], fldPath.Child("containers").Index(i))
	}
	for i := range spec.EphemeralContainers {
		fn((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), fldPath.Child("ephemeralContainers").Index(i))
	}
}

// validatePodResources validates pod-level resources: only cpu, memory and
// hugepages, the usual requirement rules, and no container limit above the
// pod's.
func validatePodResources(spec *corev1.PodSpec, claims map[string]bool, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	fldPath := specPath.Child("resources")
	if spec.Resources.Claims != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	nameFn := func(name corev1.ResourceName, p *field.Path) field.ErrorList {
		if e := validateResourceName(name, p); len(e) != 0 {
			return e
		}
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isHugePageResourceName(name) {
			return field.ErrorList{field.NotSupported(p, name, []string{"cpu", "hugepages-*", "memory"})}
		}
		return nil
	}
	errs = append(errs, validateResourceRequirements(spec.Resources, nameFn, claims, fldPath)...)
	for i, c := range spec.Containers {
		for _, name := range sortedResourceNames(c.Resources.Limits) {
			podLimit, ok := spec.Resources.Limits[name]
			if lim := c.Resources.Limits[name]; ok && lim.Cmp(podLimit) > 0 {
				p := specPath.Child("containers").Index(i).Child("resources", "limits").Key(string(name))
				errs = append(errs, field.Invalid(p, lim.String(), "must be less than or equal to pod limits of "+podLimit.String()))
			}
		}
	}
	return errs
}

func hasWhitespaceEdges(s string) bool { return len(s) != len(strings.TrimSpace(s)) }
