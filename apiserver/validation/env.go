package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Downward API field paths usable from env vars and volume files.
var (
	validEnvFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}
	validVolumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
	validResourceFields   = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory"}
	// convertibleFieldPaths are the pod field labels v1 accepts at all.
	convertibleFieldPaths = set("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
		"metadata.uid", "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
		"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
)

// validateEnv validates env vars. Names follow the relaxed rule Kubernetes
// now applies: printable ASCII other than '='.
func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if from.FieldRef != nil {
		n++
		errs = append(errs, validateObjectFieldSelector(from.FieldRef, validEnvFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		n++
		errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		n++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		n++
		errs = append(errs, validateFileKeySelector(from.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateObjectFieldSelector validates a downward API fieldRef against the
// allowed paths; label and annotation subscripts must be qualified names.
func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, allowed []string, fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	path, subscript, subscripted := splitSubscript(fs.FieldPath)
	if !convertibleFieldPaths[path] {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: field label not supported: %s", fs.FieldPath))}
	}
	if subscripted {
		switch path {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath, path, "does not support subscript")}
		}
	}
	for _, a := range allowed {
		if a == path {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), path, allowed)}
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (path, subscript string, ok bool) {
	open := strings.Index(fieldPath, "['")
	if open < 0 || !strings.HasSuffix(fieldPath, "']") || open+2 > len(fieldPath)-2 {
		return fieldPath, "", false
	}
	return fieldPath[:open], fieldPath[open+2 : len(fieldPath)-2], true
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-") && !set(validResourceFields...)[fs.Resource]:
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, validResourceFields))
	}
	return append(errs, validateResourceDivisor(fs.Resource, fs.Divisor, fldPath)...)
}

var (
	cpuDivisors    = set("1m", "1")
	memoryDivisors = set("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateResourceDivisor(rName string, divisor resource.Quantity, fldPath *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String()
	switch {
	case rName == "limits.cpu" || rName == "requests.cpu":
		if !cpuDivisors[d] {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1m and 1 are supported with the cpu resource")}
		}
	case rName == "limits.memory" || rName == "requests.memory":
		if !memoryDivisors[d] {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource")}
		}
	case rName == "limits.ephemeral-storage" || rName == "requests.ephemeral-storage":
		if !memoryDivisors[d] {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource")}
		}
	case strings.HasPrefix(rName, "requests.hugepages-") || strings.HasPrefix(rName, "limits.hugepages-"):
		if !memoryDivisors[d] {
			return field.ErrorList{field.Invalid(fldPath.Child("divisor"), rName, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource")}
		}
	}
	return nil
}

// validateKeySelector validates a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := validateName(nameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(errs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return errs
}

func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(s.VolumeName, fldPath.Child("volumeName"))...)
	}
	if s.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else {
		errs = append(errs, validateLocalNonReservedPath(s.Path, fldPath.Child("path"))...)
	}
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, src := range sources {
		p := fldPath.Index(i)
		if src.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(src.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), src.Prefix, msg))
			}
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(src.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if src.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(src.SecretRef.Name, p.Child("secretRef"))...)
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range nameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), name, msg))
	}
	return errs
}
