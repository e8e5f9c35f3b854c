package kubelet

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

// securityConfig resolves a container's effective security context (the
// container's settings over the pod's) into the runtime's: user and group,
// supplemental groups plus fsGroup (as the kubelet adds it), privileged,
// capabilities, no_new_privs from allowPrivilegeEscalation: false, a
// read-only root and an unmasked /proc.
func securityConfig(pod *corev1.Pod, c *corev1.Container) sandbox.SecurityConfig {
	var out sandbox.SecurityConfig
	if psc := pod.Spec.SecurityContext; psc != nil {
		out.RunAsUser, out.RunAsGroup = psc.RunAsUser, psc.RunAsGroup
		out.SupplementalGroups = append(out.SupplementalGroups, psc.SupplementalGroups...)
		if psc.FSGroup != nil {
			out.SupplementalGroups = append(out.SupplementalGroups, *psc.FSGroup)
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return out
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = sc.RunAsGroup
	}
	out.Privileged = sc.Privileged != nil && *sc.Privileged
	if caps := sc.Capabilities; caps != nil {
		for _, c := range caps.Add {
			out.CapAdd = append(out.CapAdd, string(c))
		}
		for _, c := range caps.Drop {
			out.CapDrop = append(out.CapDrop, string(c))
		}
	}
	out.NoNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	out.ReadOnlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	out.UnmaskedProc = sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount
	return out
}

// runAsNonRoot is the effective runAsNonRoot.
func runAsNonRoot(pod *corev1.Pod, c *corev1.Container) bool {
	if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		return *sc.RunAsNonRoot
	}
	psc := pod.Spec.SecurityContext
	return psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
}

// verifyRunAsNonRoot refuses a container that must not run as root but
// would, with Kubernetes' messages. An image without a user runs as root.
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, sec sandbox.SecurityConfig, imageUser string) error {
	if !runAsNonRoot(pod, c) {
		return nil
	}
	if sec.RunAsUser != nil {
		if *sec.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", status.PodFullName(pod), c.Name)
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" {
		user = "0"
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)",
			user, status.PodFullName(pod), c.Name)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", status.PodFullName(pod), c.Name)
	}
	return nil
}
