package kubelet

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// AppArmor annotations (deprecated since Kubernetes 1.30, still honoured).
const (
	appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
	appArmorLocalhostPrefix  = "localhost/"
	appArmorUnconfined       = "unconfined"
)

// softAdmit is the kubelet's soft admission: a pod that asks for an
// AppArmor profile (RuntimeDefault or Localhost, by field or annotation)
// on a node where AppArmor is not enabled, or for a Localhost profile the
// kernel has not loaded, cannot run here yet. It stays Pending with reason
// "AppArmor" and a message "Cannot enforce AppArmor: ...", and is checked
// again at every sync.
func (k *Kubelet) softAdmit(pod *corev1.Pod) (reason, message string) {
	profiles := appArmorProfiles(pod)
	if len(profiles) == 0 {
		return "", ""
	}
	if !k.appArmorEnabled() {
		return ReasonAppArmor, "Cannot enforce AppArmor: AppArmor is not enabled on the host"
	}
	var loaded map[string]bool
	for _, p := range profiles {
		if p.Type != corev1.AppArmorProfileTypeLocalhost || p.LocalhostProfile == nil {
			continue
		}
		if loaded == nil {
			var err error
			if loaded, err = k.loadedAppArmorProfiles(); err != nil {
				return ReasonAppArmor, "Cannot enforce AppArmor: " + err.Error()
			}
		}
		if !loaded[*p.LocalhostProfile] {
			return ReasonAppArmor, fmt.Sprintf("Cannot enforce AppArmor: profile %q is not loaded", *p.LocalhostProfile)
		}
	}
	return "", ""
}

// appArmorProfiles returns the confining profiles the pod's containers ask
// for: a container's field, else its annotation, else the pod's field.
func appArmorProfiles(pod *corev1.Pod) []corev1.AppArmorProfile {
	var podProfile *corev1.AppArmorProfile
	if sc := pod.Spec.SecurityContext; sc != nil {
		podProfile = sc.AppArmorProfile
	}
	var out []corev1.AppArmorProfile
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			p := podProfile
			if a, ok := pod.Annotations[appArmorAnnotationPrefix+c.Name]; ok {
				p = profileFromAnnotation(a)
			}
			if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
				p = c.SecurityContext.AppArmorProfile
			}
			if p != nil && p.Type != corev1.AppArmorProfileTypeUnconfined {
				out = append(out, *p)
			}
		}
	}
	return out
}

func profileFromAnnotation(a string) *corev1.AppArmorProfile {
	switch {
	case a == appArmorUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(a, appArmorLocalhostPrefix):
		name := strings.TrimPrefix(a, appArmorLocalhostPrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
}

// appArmorEnabled reads the kernel module's "enabled" parameter.
func (k *Kubelet) appArmorEnabled() bool {
	b, err := os.ReadFile(filepath.Join(k.cfg.AppArmorRoot, "module", "apparmor", "parameters", "enabled"))
	return err == nil && strings.HasPrefix(string(bytes.TrimSpace(b)), "Y")
}

// loadedAppArmorProfiles lists the profiles the kernel has loaded
// ("name (mode)" lines).
func (k *Kubelet) loadedAppArmorProfiles() (map[string]bool, error) {
	p := filepath.Join(k.cfg.AppArmorRoot, "kernel", "security", "apparmor", "profiles")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading the loaded AppArmor profiles: %w", err)
	}
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.LastIndex(line, " ("); i > 0 {
			line = line[:i]
		}
		if line != "" {
			out[line] = true
		}
	}
	return out, sc.Err()
}
