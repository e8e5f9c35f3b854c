package validation

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePodSecurityContext validates spec.securityContext and the host
// namespace flags that interact with it.
func validatePodSecurityContext(spec *corev1.PodSpec, specPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		errs = append(errs, field.Invalid(specPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	sc := spec.SecurityContext
	if sc == nil {
		return errs
	}
	if sc.FSGroup != nil {
		errs = append(errs, validateGroupID(*sc.FSGroup, fldPath.Child("fsGroup"))...)
	}
	if sc.RunAsUser != nil {
		errs = append(errs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	for i, gid := range sc.SupplementalGroups {
		errs = append(errs, validateGroupID(gid, fldPath.Child("supplementalGroups").Index(i))...)
	}
	errs = append(errs, validateSysctls(spec, fldPath.Child("sysctls"))...)
	if sc.FSGroupChangePolicy != nil {
		switch *sc.FSGroupChangePolicy {
		case corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("fsGroupChangePolicy"), sc.FSGroupChangePolicy,
				[]corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch}))
		}
	}
	if sc.SupplementalGroupsPolicy != nil {
		switch *sc.SupplementalGroupsPolicy {
		case corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("supplementalGroupsPolicy"), sc.SupplementalGroupsPolicy,
				[]corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict}))
		}
	}
	if sc.SELinuxChangePolicy != nil {
		switch *sc.SELinuxChangePolicy {
		case corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("seLinuxChangePolicy"), *sc.SELinuxChangePolicy,
				[]corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive}))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
	return errs
}

// capabilityName accepts "NET_ADMIN", "CAP_NET_ADMIN", "ALL" and the
// lower-case spellings runtimes normalise.
var capabilityName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// validateSecurityContext validates a container's securityContext.
func (v *Validator) validateSecurityContext(sc *corev1.SecurityContext, hostUsers bool, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.Privileged != nil && *sc.Privileged && !v.opts.allowPrivileged {
		errs = append(errs, field.Forbidden(fldPath.Child("privileged"), "disallowed by cluster policy"))
	}
	if sc.RunAsUser != nil {
		errs = append(errs, validateUserID(*sc.RunAsUser, fldPath.Child("runAsUser"))...)
	}
	if sc.RunAsGroup != nil {
		errs = append(errs, validateGroupID(*sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	}
	if sc.ProcMount != nil {
		switch *sc.ProcMount {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			if hostUsers {
				errs = append(errs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
			}
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount}))
		}
	}
	if sc.Capabilities != nil {
		lists := []struct {
			name string
			caps []corev1.Capability
		}{{"add", sc.Capabilities.Add}, {"drop", sc.Capabilities.Drop}}
		for _, l := range lists {
			for i, c := range l.caps {
				p := fldPath.Child("capabilities", l.name).Index(i)
				if c == "" {
					errs = append(errs, field.Required(p, ""))
				} else if !capabilityName.MatchString(string(c)) {
					errs = append(errs, field.Invalid(p, c, "must be a Linux capability name (e.g. 'NET_ADMIN' or 'CAP_NET_ADMIN')"))
				}
			}
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if string(c) == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return append(errs, validateAppArmorProfile(sc.AppArmorProfile, fldPath.Child("appArmorProfile"))...)
}

func validateUserID(uid int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidUserID(uid) {
		errs = append(errs, field.Invalid(fldPath, uid, msg))
	}
	return errs
}

func validateGroupID(gid int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidGroupID(gid) {
		errs = append(errs, field.Invalid(fldPath, gid, msg))
	}
	return errs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []corev1.SeccompProfileType{
			corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, validateLocalDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateAppArmorProfile(ap *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	if ap == nil {
		return nil
	}
	switch ap.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		if ap.LocalhostProfile == nil || strings.TrimSpace(*ap.LocalhostProfile) == "" {
			return field.ErrorList{field.Required(fldPath.Child("localhostProfile"), "must be set when AppArmor type is Localhost")}
		}
		if strings.TrimSpace(*ap.LocalhostProfile) != *ap.LocalhostProfile {
			return field.ErrorList{field.Invalid(fldPath.Child("localhostProfile"), *ap.LocalhostProfile, "must not be padded with whitespace")}
		}
		if len(*ap.LocalhostProfile) > 4095 {
			return field.ErrorList{field.TooLong(fldPath.Child("localhostProfile"), "", 4095)}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if ap.LocalhostProfile != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("localhostProfile"), ap.LocalhostProfile, "can only be set when AppArmor type is Localhost")}
		}
	case "":
		return field.ErrorList{field.Required(fldPath.Child("type"), "type is required when appArmorProfile is set")}
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), ap.Type, []corev1.AppArmorProfileType{
			corev1.AppArmorProfileTypeLocalhost, corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined})}
	}
	return nil
}

const sysctlMaxLength = 253

var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls: valid, unique names; no net.* with hostNetwork and no IPC
// sysctls with hostIPC.
func validateSysctls(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, s := range spec.SecurityContext.Sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case names[s.Name]:
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		name := strings.ReplaceAll(s.Name, "/", ".")
		switch {
		case spec.HostNetwork && strings.HasPrefix(name, "net."):
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && (strings.HasPrefix(name, "kernel.shm") || strings.HasPrefix(name, "kernel.msg") || name == "kernel.sem" || strings.HasPrefix(name, "fs.mqueue.")):
			errs = append(errs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
		names[s.Name] = true
	}
	return errs
}
