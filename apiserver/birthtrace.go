package apiserver

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/trace"
)

// The pod birth trace (package trace) is the one piece of metadata a
// pods/status write keeps: the kubelet may write only its pods' status
// (NodeRestriction, the node authorizer), and it adds its steps to the
// trace once the pod is Ready. Everything else in a status write's
// metadata is replaced by the stored object's, as in Kubernetes. A trace
// that does not decode, or lacks steps the stored one has, is ignored.

// statusBirthTrace returns the trace a pods/status write carries when it
// extends the stored one (has every step of it): a write from a stale copy
// never drops steps.
func statusBirthTrace(obj, old runtime.Object) (string, bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return "", false
	}
	v, ok := pod.Annotations[trace.Annotation]
	if !ok {
		return "", false
	}
	in, err := trace.Decode(v)
	if err != nil {
		return "", false
	}
	if oldPod, ok := old.(*corev1.Pod); ok {
		if cur, ok := trace.FromAnnotations(oldPod.Annotations); ok {
			for _, s := range cur.Steps {
				if !in.Has(s.Name) {
					return "", false
				}
			}
		}
	}
	return v, true
}

// keepBirthTrace puts the trace of a status write back after its metadata
// was reset to the stored object's. The annotations are the stored
// object's own map (shared, read-only): a changed trace goes into a copy.
func keepBirthTrace(obj runtime.Object, v string, ok bool) {
	pod, isPod := obj.(*corev1.Pod)
	if !ok || !isPod {
		return
	}
	if cur, found := pod.Annotations[trace.Annotation]; found && cur == v {
		return
	}
	annotations := make(map[string]string, len(pod.Annotations)+1)
	maps.Copy(annotations, pod.Annotations)
	annotations[trace.Annotation] = v
	pod.Annotations = annotations
}
