package validation

import (
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const fileModeErrorMsg = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes validates spec.volumes and returns the valid ones by name,
// for volume mounts to refer to.
func validateVolumes(volumes []corev1.Volume, podMeta *metav1.ObjectMeta, fldPath *field.Path, opts podOpts) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	vols := map[string]corev1.VolumeSource{}
	for i, vol := range volumes {
		p := fldPath.Index(i)
		el := validateVolumeSource(&vol.VolumeSource, vol.Name, podMeta, p, opts)
		if vol.Name == "" {
			el = append(el, field.Required(p.Child("name"), ""))
		} else {
			el = append(el, validateDNS1123Label(vol.Name, p.Child("name"))...)
		}
		if _, dup := vols[vol.Name]; dup {
			el = append(el, field.Duplicate(p.Child("name"), vol.Name))
		}
		if len(el) == 0 {
			vols[vol.Name] = vol.VolumeSource
		}
		errs = append(errs, el...)
	}
	return vols, errs
}

// validateVolumeSource requires exactly one source and validates the common
// ones in detail.
func validateVolumeSource(src *corev1.VolumeSource, volName string, podMeta *metav1.ObjectMeta, fldPath *field.Path, opts podOpts) field.ErrorList {
	var errs field.ErrorList
	rv, rt := reflect.ValueOf(src).Elem(), reflect.TypeOf(*src)
	n := 0
	for i := 0; i < rt.NumField(); i++ {
		if f := rv.Field(i); f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		if n++; n > 1 {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
		}
	}
	if n == 0 {
		return append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	if n > 1 {
		return errs
	}
	switch {
	case src.EmptyDir != nil:
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case src.HostPath != nil:
		errs = append(errs, validateHostPath(src.HostPath, fldPath.Child("hostPath"))...)
	case src.Secret != nil:
		p := fldPath.Child("secret")
		if src.Secret.SecretName == "" {
			errs = append(errs, field.Required(p.Child("secretName"), ""))
		}
		errs = append(errs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.Secret.Items, p.Child("items"))...)
	case src.ConfigMap != nil:
		p := fldPath.Child("configMap")
		if src.ConfigMap.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		errs = append(errs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		errs = append(errs, validateKeyToPaths(src.ConfigMap.Items, p.Child("items"))...)
	case src.PersistentVolumeClaim != nil:
		if src.PersistentVolumeClaim.ClaimName == "" {
			errs = append(errs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
		}
	case src.DownwardAPI != nil:
		p := fldPath.Child("downwardAPI")
		errs = append(errs, validateFileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.DownwardAPI.Items {
			errs = append(errs, validateDownwardAPIFile(&src.DownwardAPI.Items[j], p.Child("items").Index(j))...)
		}
	case src.Projected != nil:
		errs = append(errs, validateProjected(src.Projected, fldPath.Child("projected"))...)
	case src.NFS != nil:
		p := fldPath.Child("nfs")
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.CSI != nil:
		p := fldPath.Child("csi")
		if src.CSI.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), ""))
		} else {
			errs = append(errs, validateDNS1123Subdomain(strings.ToLower(src.CSI.Driver), p.Child("driver"))...)
		}
	case src.Ephemeral != nil:
		p := fldPath.Child("ephemeral")
		if src.Ephemeral.VolumeClaimTemplate == nil {
			errs = append(errs, field.Required(p.Child("volumeClaimTemplate"), ""))
		} else {
			errs = append(errs, validateTemplateMeta(&src.Ephemeral.VolumeClaimTemplate.ObjectMeta, p.Child("volumeClaimTemplate", "metadata"))...)
			if podMeta != nil && podMeta.Name != "" && volName != "" {
				pvc := podMeta.Name + "-" + volName
				for _, msg := range nameIsDNSSubdomain(pvc, false) {
					errs = append(errs, field.Invalid(fldPath.Child("name"), volName, fmt.Sprintf("PVC name %q: %v", pvc, msg)))
				}
			}
		}
	case src.Image != nil:
		p := fldPath.Child("image")
		if opts.resourceIsPod && src.Image.Reference == "" {
			errs = append(errs, field.Required(p.Child("reference"), ""))
		}
		errs = append(errs, validatePullPolicy(src.Image.PullPolicy, p.Child("pullPolicy"))...)
	case src.GitRepo != nil:
		p := fldPath.Child("gitRepo")
		if src.GitRepo.Repository == "" {
			errs = append(errs, field.Required(p.Child("repository"), ""))
		}
		errs = append(errs, validateLocalDescendingPath(src.GitRepo.Directory, p.Child("directory"))...)
	}
	return errs
}

var supportedHostPathTypes = []corev1.HostPathType{"", corev1.HostPathBlockDev, corev1.HostPathCharDev,
	corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket}

func validateHostPath(hp *corev1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if hp.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	errs := validatePathNoBacksteps(hp.Path, fldPath.Child("path"))
	if hp.Type != nil {
		ok := false
		for _, t := range supportedHostPathTypes {
			ok = ok || t == *hp.Type
		}
		if !ok {
			errs = append(errs, field.NotSupported(fldPath.Child("type"), hp.Type, supportedHostPathTypes))
		}
	}
	return errs
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPaths(items []corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		p := fldPath.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validateLocalNonReservedPath(kp.Path, p.Child("path"))...)
		errs = append(errs, validateFileMode(kp.Mode, p.Child("mode"))...)
	}
	return errs
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, validVolumeFieldPaths, fldPath.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(f.Mode, fldPath.Child("mode"))...)
}

func validateProjected(pr *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateFileMode(pr.DefaultMode, fldPath.Child("defaultMode"))
	paths := map[string]bool{}
	addPath := func(p string, bad any) {
		if p == "" {
			return
		}
		if paths[p] {
			errs = append(errs, field.Invalid(fldPath, bad, "conflicting duplicate paths"))
		}
		paths[p] = true
	}
	for i, s := range pr.Sources {
		sp := fldPath.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			if s.Secret.Name == "" {
				errs = append(errs, field.Required(sp.Child("secret", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(s.Secret.Items, sp.Child("secret", "items"))...)
			for _, kp := range s.Secret.Items {
				addPath(kp.Path, s.Secret.Name)
			}
		}
		if s.ConfigMap != nil {
			n++
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
			}
			errs = append(errs, validateKeyToPaths(s.ConfigMap.Items, sp.Child("configMap", "items"))...)
			for _, kp := range s.ConfigMap.Items {
				addPath(kp.Path, s.ConfigMap.Name)
			}
		}
		if s.DownwardAPI != nil {
			n++
			for j := range s.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&s.DownwardAPI.Items[j], sp.Child("downwardAPI", "items").Index(j))...)
				addPath(s.DownwardAPI.Items[j].Path, s.DownwardAPI.Items[j].Path)
			}
		}
		if t := s.ServiceAccountToken; t != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 10*60 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			}
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			if t.Path == "" {
				errs = append(errs, field.Required(tp.Child("path"), ""))
			} else {
				errs = append(errs, validateLocalNonReservedPath(t.Path, tp.Child("path"))...)
			}
			addPath(t.Path, t.Path)
		}
		if s.ClusterTrustBundle != nil {
			n++
			if s.ClusterTrustBundle.Path == "" {
				errs = append(errs, field.Required(sp.Child("clusterTrustBundle", "path"), ""))
			}
			addPath(s.ClusterTrustBundle.Path, s.ClusterTrustBundle.Path)
		}
		if s.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateLocalDescendingPath: relative, and no ".." element.
func validateLocalDescendingPath(target string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(fldPath, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, fldPath)...)
}

func validatePathNoBacksteps(target string, fldPath *field.Path) field.ErrorList {
	for _, item := range strings.Split(filepath.ToSlash(target), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(fldPath, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateLocalNonReservedPath: a local descending path not starting with "..".
func validateLocalNonReservedPath(target string, fldPath *field.Path) field.ErrorList {
	errs := validateLocalDescendingPath(target, fldPath)
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(fldPath, target, "must not start with '..'"))
	}
	return errs
}
