package scheduler

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/trace"
)

// The scheduler's part of the birth trace (package trace): the cycle that
// chose a node stamps trace.StepScheduled (with the node) on the assumed
// pod, and the default binder carries the trace in the Binding's
// annotations, which the API server copies onto the pod in the same write
// that sets spec.nodeName. Pods without a trace are left as they are, so
// the scheduler adds no work where the API server does not trace.

// stampScheduled records that pod, an assumed copy, was scheduled to node.
// The annotations map is replaced, never changed: the informer's copy of
// the pod shares it.
func stampScheduled(assumed *corev1.Pod, node string, now time.Time) {
	assumed.Annotations = trace.WithStep(assumed.Annotations, trace.StepScheduled, now, node)
}

// bindingAnnotations are the annotations a Binding of pod carries: its
// birth trace, if any.
func bindingAnnotations(pod *corev1.Pod) map[string]string {
	v, ok := pod.Annotations[trace.Annotation]
	if !ok {
		return nil
	}
	return map[string]string{trace.Annotation: v}
}
