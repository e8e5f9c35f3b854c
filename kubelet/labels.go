package kubelet

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// Labels and annotations the kubelet puts on sandboxes and containers, named
// as Kubernetes' kubelet names them, so a restarted kubelet (or a tool)
// matches them to pods without any other state.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"

	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPreStopHandler           = "io.kubernetes.container.preStopHandler"
	AnnotationTerminationGracePeriod   = "io.kubernetes.pod.terminationGracePeriod"

	// AnnotationSnapshotKey names the container's rootfs snapshot,
	// removed with the container.
	AnnotationSnapshotKey = "podkit.io/snapshot-key"
	// AnnotationTerminationLog is the host file bound at the container's
	// terminationMessagePath.
	AnnotationTerminationLog = "podkit.io/termination-log"
	// AnnotationInitContainer marks init containers ("true").
	AnnotationInitContainer = "podkit.io/init-container"
	// AnnotationSandboxHash is the hash of what shaped a sandbox
	// (hostname, DNS, host namespaces, sysctls, runtime handler): a
	// sandbox whose hash differs from the pod's is re-created.
	AnnotationSandboxHash = "podkit.io/sandbox-hash"
)

// podLabels are the labels identifying pod on its sandbox and containers.
func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{
		LabelPodName:      pod.Name,
		LabelPodNamespace: pod.Namespace,
		LabelPodUID:       string(pod.UID),
	}
}

// sandboxLabels are the pod's labels plus the kubelet's.
func sandboxLabels(pod *corev1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		l[k] = v
	}
	for k, v := range podLabels(pod) {
		l[k] = v
	}
	return l
}

// containerLabels identify a container of pod.
func containerLabels(pod *corev1.Pod, c *corev1.Container) map[string]string {
	l := podLabels(pod)
	l[LabelContainerName] = c.Name
	return l
}

// containerAnnotations record what the kubelet needs to stop and report a
// container without its pod (after a restart, or once the pod is gone).
func containerAnnotations(pod *corev1.Pod, c *corev1.Container, attempt uint32, isInit bool) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            containerHash(c),
		AnnotationRestartCount:             strconv.FormatUint(uint64(attempt), 10),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
		AnnotationTerminationGracePeriod:   strconv.FormatInt(specGracePeriod(pod), 10),
	}
	if isInit {
		a[AnnotationInitContainer] = "true"
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationPreStopHandler] = string(b)
		}
	}
	return a
}

// containerHash hashes what may change in a running pod's container (its
// image) with its name: a running container whose hash differs from its
// spec's is restarted, as in Kubernetes.
func containerHash(c *corev1.Container) string {
	h := fnv.New32a()
	_, _ = io.WriteString(h, c.Name)
	_, _ = h.Write([]byte{0})
	_, _ = io.WriteString(h, c.Image)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// podUIDOf returns the pod a container belongs to, by its labels.
func podUIDOf(cs *sandbox.ContainerStatus) types.UID {
	return types.UID(cs.Labels[LabelPodUID])
}

// sandboxPodUID returns the pod a sandbox belongs to.
func sandboxPodUID(sb *sandbox.Sandbox) types.UID {
	if uid := sb.Labels[LabelPodUID]; uid != "" {
		return types.UID(uid)
	}
	return types.UID(sb.Pod.UID)
}

// podFromRuntime rebuilds the little of a pod the kubelet needs to stop it
// when only the runtime knows it: its identity, and per container the
// grace period and preStop hook recorded in the annotations.
func podFromRuntime(uid types.UID, rt podRuntime) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}
	for _, sb := range rt.Sandboxes {
		pod.Name, pod.Namespace = sb.Pod.Name, sb.Pod.Namespace
	}
	seen := map[string]bool{}
	for _, cs := range rt.Containers {
		if pod.Name == "" {
			pod.Name, pod.Namespace = cs.Labels[LabelPodName], cs.Labels[LabelPodNamespace]
		}
		if g, err := strconv.ParseInt(cs.Annotations[AnnotationTerminationGracePeriod], 10, 64); err == nil && pod.Spec.TerminationGracePeriodSeconds == nil {
			pod.Spec.TerminationGracePeriodSeconds = &g
		}
		if seen[cs.Name] {
			continue
		}
		seen[cs.Name] = true
		c := corev1.Container{Name: cs.Name, Image: cs.Image, TerminationMessagePath: cs.Annotations[AnnotationTerminationMessagePath]}
		if s := cs.Annotations[AnnotationPreStopHandler]; s != "" {
			var h corev1.LifecycleHandler
			if json.Unmarshal([]byte(s), &h) == nil {
				c.Lifecycle = &corev1.Lifecycle{PreStop: &h}
			}
		}
		if cs.Annotations[AnnotationInitContainer] == "true" {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		} else {
			pod.Spec.Containers = append(pod.Spec.Containers, c)
		}
	}
	return pod
}

// specGracePeriod is the pod's terminationGracePeriodSeconds (30 unset).
func specGracePeriod(pod *corev1.Pod) int64 {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}
