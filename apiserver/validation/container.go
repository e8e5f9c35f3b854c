package validation

import (
	"fmt"
	"reflect"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerContext is what container validation needs from the pod spec.
type containerContext struct {
	vols      map[string]corev1.VolumeSource // valid volumes by name
	claims    map[string]bool                // spec.resourceClaims names
	grace     *int64                         // terminationGracePeriodSeconds
	hostUsers bool
	windows   bool // spec.os.name is windows: mount paths need not be absolute
	opts      podOpts
	v         *Validator
}

func (cc containerContext) validateContainers(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, cc.validateContainerCommon(c, p)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names[c.Name] = true
		errs = append(errs, cc.validateProbesAndLifecycle(c, p)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, checkHostPortConflicts(containers, fldPath)...)
}

func (cc containerContext) validateInitContainers(inits, regular []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, c := range regular {
		names[c.Name] = true
	}
	for i := range inits {
		c := &inits[i]
		p := fldPath.Index(i)
		errs = append(errs, cc.validateContainerCommon(c, p)...)
		sidecar := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				sidecar = true
			} else {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		// Init containers run one by one: host ports only conflict within one.
		errs = append(errs, checkHostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if sidecar {
			errs = append(errs, cc.validateProbesAndLifecycle(c, p)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			errs = append(errs, field.Forbidden(p.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			errs = append(errs, field.Forbidden(p.Child("startupProbe"), msg))
		}
	}
	return errs
}

// ephemeralAllowed are the Container fields an ephemeral container may set.
var ephemeralAllowed = set("Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath", "TerminationMessagePolicy",
	"ImagePullPolicy", "SecurityContext", "Stdin", "StdinOnce", "TTY")

func (cc containerContext) validateEphemeralContainers(ecs []corev1.EphemeralContainer, regular, inits []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	others, all := map[string]bool{}, map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, regular...), inits...) {
		others[c.Name], all[c.Name] = true, true
	}
	for i := range ecs {
		ec := &ecs[i]
		p := fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, cc.validateContainerCommon(c, p)...)
		if all[ec.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		}
		all[ec.Name] = true
		if ec.TargetContainerName != "" && !others[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbidFieldsExcept(*c, ephemeralAllowed, "cannot be set for an Ephemeral Container", p)...)
		for j, m := range ec.VolumeMounts {
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}

// forbidFieldsExcept reports every non-zero field of the struct value that is
// not in allowed, with its JSON-style (lower camel case) name.
func forbidFieldsExcept(value any, allowed map[string]bool, detail string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	t, rv := reflect.TypeOf(value), reflect.ValueOf(value)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowed[f.Name] || rv.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		errs = append(errs, field.Forbidden(fldPath.Child(string(unicode.ToLower(r))+f.Name[n:]), detail))
	}
	return errs
}

// validateContainerCommon applies the rules every container kind shares.
func (cc containerContext) validateContainerCommon(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	} else if cc.opts.resourceIsPod && hasWhitespaceEdges(c.Image) {
		errs = append(errs, field.Invalid(p.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, cc.validateVolumeMounts(c, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c, cc.vols, p.Child("volumeDevices"))...)
	errs = append(errs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateResourceRequirements(&c.Resources, validateContainerResourceName, cc.claims, p.Child("resources"))...)
	errs = append(errs, cc.v.validateSecurityContext(c.SecurityContext, cc.hostUsers, p.Child("securityContext"))...)
	return errs
}

func validatePullPolicy(policy corev1.PullPolicy, fldPath *field.Path) field.ErrorList {
	switch policy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, policy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})}
	}
}

var supportedProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateProtocol(proto corev1.Protocol, fldPath *field.Path) field.ErrorList {
	switch proto {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, proto, supportedProtocols)}
	}
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names[port.Name] = true
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, validateProtocol(port.Protocol, p.Child("protocol"))...)
	}
	return errs
}

// checkHostPortConflicts reports a protocol/hostIP/hostPort used twice.
func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen[key] {
				errs = append(errs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen[key] = true
		}
	}
	return errs
}

// validatePodResourceClaims validates spec.resourceClaims and returns the
// valid claim names.
func validatePodResourceClaims(claims []corev1.PodResourceClaim, fldPath *field.Path) (map[string]bool, field.ErrorList) {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, c := range claims {
		p := fldPath.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
			names[c.Name] = true
		}
		if c.ResourceClaimName != nil && c.ResourceClaimTemplateName != nil {
			errs = append(errs, field.Invalid(p, c, "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"))
		}
		if c.ResourceClaimName == nil && c.ResourceClaimTemplateName == nil {
			errs = append(errs, field.Invalid(p, c, "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
		}
		if c.ResourceClaimName != nil {
			errs = append(errs, validateName(nameIsDNSSubdomain, *c.ResourceClaimName, p.Child("resourceClaimName"))...)
		}
		if c.ResourceClaimTemplateName != nil {
			errs = append(errs, validateName(nameIsDNSSubdomain, *c.ResourceClaimTemplateName, p.Child("resourceClaimTemplateName"))...)
		}
	}
	return names, errs
}
