package volume

import (
	"errors"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/sandbox"
)

// Mounts translates the container's volumeMounts into bind mounts for the
// runtime, in order, given the host paths Setup returned. configMap,
// secret, downwardAPI and projected volumes are always read-only, as in
// Kubernetes. subPath and subPathExpr mounts are resolved safely inside the
// volume (missing directories created) and bind mounted under
// <pod>/volume-subpaths, which is the HostPath returned; calling Mounts again
// (a container restart) reuses those bind mounts while they still point at
// the same file. Bidirectional propagation is refused for unprivileged
// containers.
func (m *Manager) Mounts(pod *corev1.Pod, c *corev1.Container, paths map[string]string) ([]sandbox.Mount, error) {
	if err := checkPod(pod); err != nil {
		return nil, err
	}
	if c == nil {
		return nil, errors.New("volume: nil container")
	}
	vols := make(map[string]*corev1.Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		vols[pod.Spec.Volumes[i].Name] = &pod.Spec.Volumes[i]
	}
	unlock := m.lock(pod.UID)
	defer unlock()

	var env map[string]string
	mounts := make([]sandbox.Mount, 0, len(c.VolumeMounts))
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		vol, host := vols[vm.Name], paths[vm.Name]
		if vol == nil || host == "" {
			return nil, tagf(ErrNotSetUp, "cannot find volume %q to mount into container %q", vm.Name, c.Name)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, tagf(ErrSubPath, "volumeMount %q of container %q: mountPath %q must be an absolute path", vm.Name, c.Name, vm.MountPath)
		}
		prop, err := propagation(vm, c)
		if err != nil {
			return nil, err
		}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
			return nil, tagf(ErrUnsupported, "volumeMount %q of container %q: recursiveReadOnly Enabled is not supported by the runtime", vm.Name, c.Name)
		}
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			if env == nil {
				env = m.containerEnv(pod, c)
			}
			if sub, err = expandSubPath(vm.SubPathExpr, env); err != nil {
				return nil, tagf(ErrSubPath, "volumeMount %q of container %q: subPathExpr %q: %v", vm.Name, c.Name, vm.SubPathExpr, err)
			}
		}
		if sub != "" {
			if err := checkSubPath(sub); err != nil {
				return nil, err
			}
			if host, err = m.bindSubPath(pod.UID, vm.Name, c.Name, i, host, sub); err != nil {
				return nil, err
			}
		}
		mounts = append(mounts, sandbox.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      host,
			ReadOnly:      vm.ReadOnly || apiDataVolume(vol),
			Propagation:   prop,
		})
	}
	return mounts, nil
}

// apiDataVolume reports the volume types whose contents the kubelet writes
// from API objects; containers always get them read-only.
func apiDataVolume(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// propagation maps mountPropagation to the runtime's mode. Bidirectional is
// allowed only for privileged containers, as API validation requires.
func propagation(vm *corev1.VolumeMount, c *corev1.Container) (sandbox.Propagation, error) {
	if vm.MountPropagation == nil {
		return sandbox.PropagationPrivate, nil
	}
	switch *vm.MountPropagation {
	case corev1.MountPropagationNone:
		return sandbox.PropagationPrivate, nil
	case corev1.MountPropagationHostToContainer:
		return sandbox.PropagationHostToContainer, nil
	case corev1.MountPropagationBidirectional:
		if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
			return "", tagf(ErrPropagation, "volumeMount %q of container %q: Bidirectional mount propagation is available only to privileged containers", vm.Name, c.Name)
		}
		return sandbox.PropagationBidirectional, nil
	}
	return "", tagf(ErrPropagation, "invalid MountPropagation mode: %q", *vm.MountPropagation)
}

// checkSubPath applies the kubelet's checks: relative, no "..".
func checkSubPath(sub string) error {
	if filepath.IsAbs(sub) {
		return tagf(ErrSubPath, "error SubPath `%s` must not be an absolute path", sub)
	}
	for _, el := range strings.Split(filepath.ToSlash(sub), "/") {
		if el == ".." {
			return tagf(ErrSubPath, "unable to provision SubPath `%s`: must not contain '..'", sub)
		}
	}
	return nil
}
