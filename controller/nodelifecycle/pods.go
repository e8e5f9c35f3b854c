package nodelifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// markPodsNotReady sets the Ready condition of the node's pods to False
// (through the status subresource, on the pod as cached: a conflict means
// someone else wrote it and is retried on the next pass).
func (c *Controller) markPodsNotReady(ctx context.Context, nodeName string) error {
	pods, err := c.podsOnNode(nodeName)
	if err != nil {
		return err
	}
	now := metav1.NewTime(c.clock.Now())
	var errs []error
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			continue
		}
		i := readyIndex(p)
		if i < 0 || p.Status.Conditions[i].Status == corev1.ConditionFalse {
			continue
		}
		pod := p.DeepCopy()
		cond := &pod.Status.Conditions[i]
		cond.Status = corev1.ConditionFalse
		cond.LastTransitionTime = now
		cond.Reason, cond.Message = "", ""
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			errs = append(errs, fmt.Errorf("marking pod %s/%s not ready: %w", pod.Namespace, pod.Name, err))
			continue
		}
		c.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}

func readyIndex(p *corev1.Pod) int {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return i
		}
	}
	return -1
}
