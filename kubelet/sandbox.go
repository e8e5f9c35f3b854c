package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/internal/regfile"
	"github.com/podkit/podkit/sandbox"
)

// AnnotationCgroupParent records the pod cgroup on its sandbox, so the
// cgroup is found and removed after a kubelet restart.
const AnnotationCgroupParent = "podkit.io/cgroup-parent"

// sandboxConfig describes the pod's sandbox (attempt 0) and returns the
// DNS warnings worth an event.
func (k *Kubelet) sandboxConfig(ctx context.Context, pod *corev1.Pod, logDir, parent string) (*sandbox.SandboxConfig, []string, error) {
	resolv, warnings, err := k.resolvMemo.resolvConf(pod, k.cfg.DNS)
	if err != nil {
		return nil, nil, fmt.Errorf("pod DNS configuration: %w", err)
	}
	domain := k.cfg.DNS.ClusterDomain
	hostname, err := cni.KernelHostname(pod, domain)
	if err != nil {
		return nil, nil, err
	}
	hostnameFile, err := cni.HostnameFile(pod, domain, k.cfg.NodeHostname)
	if err != nil {
		return nil, nil, err
	}
	handler, err := k.runtimeHandler(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	cfg := &sandbox.SandboxConfig{
		Pod:            sandbox.PodMeta{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
		Hostname:       hostname,
		LogDirectory:   logDir,
		ResolvConf:     resolv,
		HostnameFile:   hostnameFile,
		CgroupParent:   parent,
		HostNetwork:    pod.Spec.HostNetwork,
		HostPID:        pod.Spec.HostPID,
		HostIPC:        pod.Spec.HostIPC,
		SharePID:       pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace,
		RuntimeHandler: handler,
		Labels:         sandboxLabels(pod),
		Annotations:    map[string]string{},
	}
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		cfg.Sysctls = map[string]string{}
		for _, s := range sc.Sysctls {
			cfg.Sysctls[s.Name] = s.Value
		}
	}
	for k, v := range pod.Annotations {
		cfg.Annotations[k] = v
	}
	cfg.Annotations[AnnotationSandboxHash] = sandboxHash(cfg)
	if parent != "" {
		cfg.Annotations[AnnotationCgroupParent] = parent
	}
	return cfg, warnings, nil
}

// sandboxHash hashes what shapes a sandbox once it exists.
func sandboxHash(cfg *sandbox.SandboxConfig) string {
	b, _ := json.Marshal(struct {
		Hostname                      string
		Resolv, HostnameFile          []byte
		HostNetwork, HostPID, HostIPC bool
		SharePID                      bool
		Sysctls                       map[string]string
		Handler                       string
	}{cfg.Hostname, cfg.ResolvConf, cfg.HostnameFile, cfg.HostNetwork, cfg.HostPID, cfg.HostIPC, cfg.SharePID, cfg.Sysctls, cfg.RuntimeHandler})
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// runtimeHandler resolves the pod's RuntimeClass to its handler.
func (k *Kubelet) runtimeHandler(ctx context.Context, pod *corev1.Pod) (string, error) {
	name := pod.Spec.RuntimeClassName
	if name == nil || *name == "" {
		return "", nil
	}
	rc, err := k.client.NodeV1().RuntimeClasses().Get(ctx, *name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("RuntimeClass %q not found", *name)
	}
	if err != nil {
		return "", fmt.Errorf("looking up RuntimeClass %q: %w", *name, err)
	}
	return rc.Handler, nil
}

// sandboxUsable says sb can keep serving the pod.
func sandboxUsable(pod *corev1.Pod, sb *sandbox.Sandbox, hash string) bool {
	return sb != nil && sb.State == sandbox.SandboxReady && sb.Annotations[AnnotationSandboxHash] == hash &&
		(pod.Spec.HostNetwork || len(sb.IPs) > 0)
}

// ensureSandbox returns the pod's ready sandbox, creating it (and, when
// the old one died or no longer fits the pod, killing the pod's containers
// and stopping the old one first). fresh says it was just created. A pod
// with restartPolicy Never whose containers already ran gets no new
// sandbox, as in Kubernetes: the old one is returned as it is.
func (k *Kubelet) ensureSandbox(ctx context.Context, w *podWorker, pod *corev1.Pod, rt podRuntime, parent string) (*sandbox.Sandbox, bool, error) {
	cfg, warnings, err := k.sandboxConfig(ctx, pod, k.pathsOf(&w.st, pod).logDir, parent)
	if err != nil {
		k.event(pod, corev1.EventTypeWarning, EventFailedCreatePodSandBox, "Failed to create pod sandbox: "+err.Error())
		return nil, false, err
	}
	hash := cfg.Annotations[AnnotationSandboxHash]
	old := rt.latestSandbox()
	w.st.hostsChecked = false
	if sandboxUsable(pod, old, hash) {
		if err := k.writeEtcHosts(&w.st, pod, old); err != nil {
			k.log.Warn("writing the pod's hosts file", "pod", podKey(pod), "err", err)
		}
		return old, false, nil
	}
	if old != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(rt.Containers) > 0 {
		return old, false, nil
	}
	if old != nil {
		k.event(pod, corev1.EventTypeNormal, EventSandboxChanged, msgSandboxChanged)
		if err := k.killContainers(ctx, pod, rt.Containers, nil); err != nil {
			return nil, false, err
		}
		for _, sb := range rt.Sandboxes {
			if sb.State == sandbox.SandboxReady {
				if err := k.runtime.StopPodSandbox(ctx, sb.ID); err != nil {
					return nil, false, fmt.Errorf("stopping sandbox %s: %w", sb.ID, err)
				}
				k.cache.setSandboxState(pod.UID, sb.ID, sandbox.SandboxNotReady)
			}
		}
		for _, sb := range rt.Sandboxes {
			cfg.Pod.Attempt = max(cfg.Pod.Attempt, sb.Pod.Attempt+1)
		}
	}
	for _, msg := range warnings {
		k.event(pod, corev1.EventTypeWarning, EventDNSConfigForming, msg)
	}
	// The log directory (cfg.LogDirectory) is there: makePodDirs made it
	// earlier in this sync.
	sb, err := k.runtime.RunPodSandbox(ctx, cfg)
	if err != nil {
		k.event(pod, corev1.EventTypeWarning, EventFailedCreatePodSandBox, "Failed to create pod sandbox: "+err.Error())
		return nil, false, err
	}
	k.cache.putSandbox(sb)
	if err := k.writeEtcHosts(&w.st, pod, sb); err != nil {
		k.log.Warn("writing the pod's hosts file", "pod", podKey(pod), "err", err)
	}
	return sb, true, nil
}

// sandboxIPs are the pod's addresses: the sandbox's, or the node's on the
// host network.
func (k *Kubelet) sandboxIPs(pod *corev1.Pod, sb *sandbox.Sandbox) []netip.Addr {
	if pod.Spec.HostNetwork {
		return k.nodeIPs()
	}
	if sb == nil {
		return nil
	}
	return sb.IPs
}

// writeEtcHosts writes the pod's /etc/hosts (as the kubelet manages it,
// bind mounted into every container) once the pod has addresses: through
// a temporary file renamed over it, unless it is current already. In a pod
// directory the worker created, before the worker ever wrote it, the file
// cannot exist: it is written in place, with nothing to read or replace.
func (k *Kubelet) writeEtcHosts(st *podState, pod *corev1.Pod, sb *sandbox.Sandbox) error {
	ips := k.sandboxIPs(pod, sb)
	if len(ips) == 0 {
		return nil
	}
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		nodeHosts, _ = os.ReadFile(k.cfg.HostsFile)
	}
	b, err := cni.HostsFile(pod, ips, k.cfg.DNS.ClusterDomain, nodeHosts)
	if err != nil {
		return err
	}
	p := k.pathsOf(st, pod).etcHosts
	if st.newPodDir && !st.hostsWritten {
		if err := regfile.WriteFile(p, b, 0o644); err != nil {
			return err
		}
		st.hostsWritten, st.hostsChecked = true, true
		return nil
	}
	if cur, err := os.ReadFile(p); err == nil && string(cur) == string(b) {
		st.hostsChecked = true
		return nil
	}
	tmp := p + ".tmp"
	if err := regfile.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	st.hostsWritten, st.hostsChecked = true, true
	return nil
}

// podIP is the pod's first address as a string ("" without one).
func (k *Kubelet) podIP(pod *corev1.Pod, sb *sandbox.Sandbox) string {
	if ips := k.sandboxIPs(pod, sb); len(ips) > 0 {
		return ips[0].Unmap().String()
	}
	return ""
}
