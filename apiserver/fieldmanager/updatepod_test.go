package fieldmanager

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

var (
	kubelet   = UpdateOptions{UserAgent: "kubelet/v1.33.0 (linux/amd64) kubernetes/podkit", Subresource: "status"}
	kcm       = UpdateOptions{FieldManager: "kube-controller-manager"}
	kcmStatus = UpdateOptions{FieldManager: "kube-controller-manager", Subresource: "status"}
)

// workloadPod is the pod a ReplicaSet creates, before the API server
// tracks it.
func workloadPod() runtime.Object {
	pod := semantictest.WorkloadPod()
	pod.ManagedFields = nil
	pod.ResourceVersion = ""
	pod.Status = corev1.PodStatus{}
	return pod
}

// bind is what the binding subresource does to the stored pod.
func bind(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	pod.Spec.NodeName = "worker-1"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))}}
}

// kubeletWrites sets the status the kubelet reports.
func kubeletWrites(ready bool) func(runtime.Object) {
	return as(func(p *corev1.Pod) { *p = *kubeletStatus(p, ready) })
}

// podCases follow a pod through the writes of its components.
func podCases() []updateCase {
	return []updateCase{{
		name: "pod: kubelet status writes", obj: workloadPod, creator: "kube-controller-manager",
		steps: []step{
			{name: "bind", stored: bind},
			{name: "first status", opts: kubelet, change: kubeletWrites(false)},
			{name: "ready", opts: kubelet, change: kubeletWrites(true)},
			{name: "same status again", opts: kubelet, change: kubeletWrites(true)},
			{name: "container restarted", opts: kubelet, change: as(func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 1
				p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: metav1.NewTime(t0), FinishedAt: metav1.NewTime(t0.Add(time.Minute))}}
			})},
			{name: "new pod IP", opts: kubelet, change: as(func(p *corev1.Pod) {
				p.Status.PodIP = "10.244.1.99"
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.99"}, {IP: "fd00::99"}}
			})},
			{name: "status write touching spec and labels", opts: kubelet, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = "evil:latest"
				p.Labels["kubelet-was-here"] = "1"
				p.Labels["app"] = "changed"
				p.OwnerReferences = nil
				p.Status.Message = "hello"
			})},
			{name: "conditions dropped and reordered", opts: kubelet, change: as(func(p *corev1.Pod) {
				c := p.Status.Conditions
				p.Status.Conditions = []corev1.PodCondition{c[3], c[0], c[2]}
			})},
			{name: "main resource write touching status", opts: kcm, change: as(func(p *corev1.Pod) {
				p.Finalizers = append(p.Finalizers, "example.com/cleanup")
				p.Status.Phase = corev1.PodFailed
			})},
			{name: "request without managedFields", opts: UpdateOptions{FieldManager: "kubectl-label"}, change: as(func(p *corev1.Pod) {
				p.ManagedFields = nil
				p.Labels["team"] = "a"
			})},
			{name: "status cleared", opts: kubelet, change: as(func(p *corev1.Pod) { p.Status = corev1.PodStatus{} })},
		},
	}, {
		name: "pod: binding through the main resource, then eviction", obj: workloadPod, creator: "kube-controller-manager",
		steps: []step{
			{name: "scheduler sets nodeName", opts: UpdateOptions{FieldManager: "kube-scheduler"}, change: as(func(p *corev1.Pod) {
				p.Spec.NodeName = "worker-2"
			})},
			{name: "kubelet status", opts: kubelet, change: kubeletWrites(true)},
			{name: "disruption condition", opts: UpdateOptions{FieldManager: "kube-controller-manager", Subresource: "status"}, change: as(func(p *corev1.Pod) {
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
			})},
			{name: "kubelet keeps it", opts: kubelet, change: as(func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodFailed
				p.Status.ContainerStatuses = nil
			})},
		},
	}, {
		name: "pod: list items added, removed, reordered, duplicated", obj: workloadPod, creator: "kube-controller-manager",
		steps: []step{
			{name: "env item added", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "NEW", Value: "1"})
			})},
			{name: "env item removed", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[1].Env = p.Spec.Containers[1].Env[1:]
			})},
			{name: "containers reordered", opts: UpdateOptions{FieldManager: "reorderer"}, change: as(func(p *corev1.Pod) {
				c := p.Spec.Containers
				p.Spec.Containers = []corev1.Container{c[1], c[0]}
			})},
			{name: "env duplicated", opts: UpdateOptions{FieldManager: "dup"}, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "MODE", Value: "debug"})
			})},
			{name: "duplicates changed", opts: UpdateOptions{FieldManager: "dup2"}, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "MODE", Value: "trace"})
			})},
			{name: "duplicates kept", opts: UpdateOptions{FieldManager: "dup3"}, change: as(func(p *corev1.Pod) {
				p.Labels["x"] = "y"
			})},
			{name: "duplicates resolved", opts: UpdateOptions{FieldManager: "dedup"}, change: as(func(p *corev1.Pod) {
				var env []corev1.EnvVar
				for _, e := range p.Spec.Containers[0].Env {
					if e.Name != "MODE" {
						env = append(env, e)
					}
				}
				p.Spec.Containers[0].Env = append(env, corev1.EnvVar{Name: "MODE", Value: "one"})
			})},
			{name: "duplicate ports appear", opts: UpdateOptions{FieldManager: "dup"}, change: as(func(p *corev1.Pod) {
				p.Spec.Containers[1].Ports = append(p.Spec.Containers[1].Ports, p.Spec.Containers[1].Ports[0])
			})},
			{name: "atomic lists changed", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(p *corev1.Pod) {
				p.Spec.Tolerations = p.Spec.Tolerations[:1]
				p.Spec.Containers[0].Args = []string{"--verbose"}
				p.Spec.Containers[0].Command = []string{}
			})},
			{name: "finalizer set edited", opts: UpdateOptions{FieldManager: "finalizer"}, change: as(func(p *corev1.Pod) {
				p.Finalizers = []string{"a/b", "c/d", "a/b"}
			})},
			{name: "fields removed", opts: UpdateOptions{FieldManager: "kubectl-edit"}, change: as(func(p *corev1.Pod) {
				p.Annotations = nil
				p.Spec.Containers[0].ReadinessProbe = nil
				p.Spec.Containers[1].Resources.Limits = nil
				p.Spec.SecurityContext = nil
				p.Finalizers = nil
			})},
			{name: "server-side apply", apply: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c8f6d-x2x9k","namespace":"default","labels":{"applied":"yes"}}}`,
				opts: UpdateOptions{FieldManager: "applier"}},
			{name: "update over an applied field", opts: UpdateOptions{FieldManager: "kubectl-label"}, change: as(func(p *corev1.Pod) {
				p.Labels["applied"] = "no"
			})},
			{name: "the applier's label removed", opts: UpdateOptions{FieldManager: "kubectl-label"}, change: as(func(p *corev1.Pod) {
				delete(p.Labels, "applied")
			})},
		},
	}}
}
