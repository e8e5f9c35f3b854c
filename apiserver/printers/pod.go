package printers

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// nodeUnreachablePodReason is the status reason the node lifecycle
// controller sets on pods of a node it lost; such pods print as "Unknown".
const nodeUnreachablePodReason = "NodeLost"

// Row conditions Kubernetes attaches to pods that ran to completion, so
// clients can de-emphasise them.
func podCompletedConditions(phase corev1.PodPhase) []metav1.TableRowCondition {
	switch phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return nil
}

// podRow computes NAME, READY, STATUS, RESTARTS, AGE, IP, NODE,
// NOMINATED NODE and READINESS GATES of a pod.
func podRow(c *cellContext, pod *corev1.Pod) ([]any, []metav1.TableRowCondition) {
	s := podSummary(pod)

	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, c.since(s.lastRestart))
	}

	podIP := none
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		podIP = pod.Status.PodIPs[0].IP
	}
	cells := []any{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.reason,
		restarts,
		c.since(pod.CreationTimestamp),
		podIP,
		orPlaceholder(pod.Spec.NodeName, none),
		orPlaceholder(pod.Status.NominatedNodeName, none),
		readinessGates(pod),
	}
	return cells, podCompletedConditions(pod.Status.Phase)
}

// podStatusSummary is what the READY, STATUS and RESTARTS cells show.
type podStatusSummary struct {
	ready, total int
	reason       string
	restarts     int
	lastRestart  metav1.Time
}

// podSummary applies Kubernetes' pod status logic: the phase or status
// reason, overridden by scheduling gates, by the first init container that
// has not finished, by the app containers' waiting or terminated reasons, and
// finally by deletion ("Terminating", or "Unknown" for a lost node).
func podSummary(pod *corev1.Pod) podStatusSummary {
	s := podStatusSummary{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.reason = pod.Status.Reason
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonSchedulingGated {
			s.reason = corev1.PodReasonSchedulingGated
		}
	}

	initContainers := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		initContainers[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartable(&pod.Spec.InitContainers[i]) {
			s.total++ // sidecars count as containers of the pod
		}
	}

	sidecarRestarts := 0
	var lastSidecarRestart metav1.Time
	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		st := &pod.Status.InitContainerStatuses[i]
		sidecar := isRestartable(initContainers[st.Name])
		s.restarts += int(st.RestartCount)
		laterTermination(&s.lastRestart, st)
		if sidecar {
			sidecarRestarts += int(st.RestartCount)
			laterTermination(&lastSidecarRestart, st)
		}
		switch {
		case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
			continue // finished successfully
		case sidecar && st.Started != nil && *st.Started:
			if st.Ready {
				s.ready++
			}
			continue // a started sidecar does not hold initialisation back
		case st.State.Terminated != nil:
			t := st.State.Terminated
			switch {
			case t.Reason != "":
				s.reason = "Init:" + t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
			s.reason = "Init:" + st.State.Waiting.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(pod.Status.Conditions, corev1.PodInitialized) {
		// Once initialised, only sidecar restarts count from the init containers.
		s.restarts = sidecarRestarts
		s.lastRestart = lastSidecarRestart
		hasRunning := false
		errorReason := ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			st := &pod.Status.ContainerStatuses[i]
			s.restarts += int(st.RestartCount)
			laterTermination(&s.lastRestart, st)
			switch {
			case st.State.Waiting != nil && st.State.Waiting.Reason != "":
				s.reason = st.State.Waiting.Reason
			case st.State.Terminated != nil:
				t := st.State.Terminated
				switch {
				case t.Reason != "":
					s.reason = t.Reason
				case t.Signal != 0:
					s.reason = fmt.Sprintf("Signal:%d", t.Signal)
				default:
					s.reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
				}
				if t.ExitCode != 0 {
					errorReason = s.reason
				}
			case st.Ready && st.State.Running != nil:
				hasRunning = true
				s.ready++
			}
		}
		// A "Completed" container next to running ones does not make the pod completed.
		if s.reason == "Completed" {
			switch {
			case hasRunning && hasReadyCondition(pod.Status.Conditions):
				s.reason = "Running"
			case errorReason != "":
				s.reason = errorReason
			case hasRunning:
				s.reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeUnreachablePodReason:
			s.reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.reason = "Terminating"
		}
	}
	return s
}

// laterTermination moves *last forward to the container's last termination
// time if that is later.
func laterTermination(last *metav1.Time, st *corev1.ContainerStatus) {
	if t := st.LastTerminationState.Terminated; t != nil && last.Before(&t.FinishedAt) {
		*last = t.FinishedAt
	}
}

// isRestartable reports whether an init container is a sidecar
// (restartPolicy Always).
func isRestartable(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podConditionTrue reports whether the first condition of type t is True.
func podConditionTrue(conds []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hasReadyCondition reports whether any Ready condition is True.
func hasReadyCondition(conds []corev1.PodCondition) bool {
	for _, c := range conds {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// readinessGates is the READINESS GATES cell: "<true>/<gates>" or "<none>".
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return none
	}
	trueConditions := 0
	for _, gate := range pod.Spec.ReadinessGates {
		for _, cond := range pod.Status.Conditions {
			if cond.Type == gate.ConditionType {
				if cond.Status == corev1.ConditionTrue {
					trueConditions++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", trueConditions, len(pod.Spec.ReadinessGates))
}

// podTemplateCells computes NAME, CONTAINERS, IMAGES, POD LABELS.
func podTemplateCells(_ *cellContext, t *corev1.PodTemplate) []any {
	names, images := containerCells(t.Template.Spec.Containers)
	return []any{t.Name, names, images, labels.FormatLabels(t.Template.Labels)}
}
