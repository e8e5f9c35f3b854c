package volume

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// Permission bits Kubernetes' SetVolumeOwnership adds for the fsGroup.
const (
	rwMask   os.FileMode = 0o660
	roMask   os.FileMode = 0o440
	execMask os.FileMode = 0o110
)

// fsGroup is the pod's securityContext.fsGroup.
func fsGroup(pod *corev1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// fsUser is the one runAsUser shared by all init and app containers of the
// pod, or nil when one of them has none or they differ (the kubelet's
// FsUserFrom). A projected token is owned by it.
func fsUser(pod *corev1.Pod) *int64 {
	var uid *int64
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			u := runAsUser(pod, &cs[i])
			if u == nil || uid != nil && *uid != *u {
				return nil
			}
			uid = u
		}
	}
	return uid
}

func runAsUser(pod *corev1.Pod, c *corev1.Container) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if pod.Spec.SecurityContext != nil {
		return pod.Spec.SecurityContext.RunAsUser
	}
	return nil
}

// ownDir gives one directory to the group gid with setgid and g+rx (plus
// g+w unless readOnly).
func ownDir(dir string, gid int64, readOnly bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := os.Lchown(dir, -1, int(gid)); err != nil {
		return fmt.Errorf("apply fsGroup %d to %s: %w", gid, dir, err)
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	mode := fi.Mode()&(os.ModePerm|os.ModeSticky) | mask | execMask | os.ModeSetgid
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("apply fsGroup %d to %s: %w", gid, dir, err)
	}
	return nil
}

// ownDirs applies ownDir to root and every directory below it (files got
// their group when they were written).
func ownDirs(root string, gid int64, readOnly bool) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return ownDir(p, gid, readOnly)
	})
}
