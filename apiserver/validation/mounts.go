package validation

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumeMounts checks that mounts name existing volumes, have unique
// absolute mount paths and relative subPaths, and valid propagation.
func (cc containerContext) validateVolumeMounts(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPoints := map[string]bool{}
	for i, m := range c.VolumeMounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if _, ok := cc.vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		case !cc.windows && !path.IsAbs(m.MountPath):
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be an absolute path"))
		}
		if mountPoints[m.MountPath] {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints[m.MountPath] = true
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, dp := range devices {
			if dp == m.MountPath {
				errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
			}
		}
		if src, ok := cc.vols[m.Name]; ok && src.Image != nil {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPath"), m.SubPath, "not allowed in image volume sources"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		errs = append(errs, validateMountPropagation(m.MountPropagation, c, p.Child("mountPropagation"))...)
		errs = append(errs, validateRecursiveReadOnly(m, p.Child("recursiveReadOnly"))...)
	}
	return errs
}

func validateMountPropagation(mp *corev1.MountPropagationMode, c *corev1.Container, fldPath *field.Path) field.ErrorList {
	if mp == nil {
		return nil
	}
	switch *mp {
	case corev1.MountPropagationBidirectional:
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			return field.ErrorList{field.Forbidden(fldPath, "Bidirectional mount propagation is available only to privileged containers")}
		}
	case corev1.MountPropagationHostToContainer, corev1.MountPropagationNone:
	default:
		return field.ErrorList{field.NotSupported(fldPath, *mp, []corev1.MountPropagationMode{
			corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone})}
	}
	return nil
}

func validateRecursiveReadOnly(m corev1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var errs field.ErrorList
	switch *m.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyDisabled:
	case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			errs = append(errs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath, *m.RecursiveReadOnly, []corev1.RecursiveReadOnlyMode{
			corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
	}
	return errs
}

// validateVolumeDevices: raw block devices must come from a PVC or an
// ephemeral volume, with unique names and paths not shared with mounts.
func validateVolumeDevices(c *corev1.Container, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	names, paths := map[string]bool{}, map[string]bool{}
	for i, d := range c.VolumeDevices {
		p := fldPath.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if names[d.Name] {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		if src, ok := vols[d.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		} else if src.PersistentVolumeClaim == nil && src.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if paths[d.DevicePath] {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p)) > 0 {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			paths[d.DevicePath] = true
		}
		if _, ok := mounts[d.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		for _, mp := range mounts {
			if mp == d.DevicePath {
				errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
			}
		}
		if d.Name != "" {
			names[d.Name] = true
		}
	}
	return errs
}
