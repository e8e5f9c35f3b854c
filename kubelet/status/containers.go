package status

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/sandbox"
)

// Messages of containers the runtime lost track of.
const (
	msgLostTerminated = "The container could not be located when the pod was terminated"
	msgLostRunning    = "The container could not be located when the pod was deleted.  The container used to be Running"
	// exitCodeLost is the exit code reported for a lost container.
	exitCodeLost = 137
)

// containersByName groups the runtime's containers by name, newest first.
func containersByName(cs []*sandbox.ContainerStatus) map[string][]*sandbox.ContainerStatus {
	m := map[string][]*sandbox.ContainerStatus{}
	for _, c := range cs {
		if c != nil {
			m[c.Name] = append(m[c.Name], c)
		}
	}
	for _, list := range m {
		sort.SliceStable(list, func(i, j int) bool {
			if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
				return list[i].CreatedAt.After(list[j].CreatedAt)
			}
			return list[i].Attempt > list[j].Attempt
		})
	}
	return m
}

// convertStatuses builds the statuses of specs (init or app containers), as
// the kubelet's convertToAPIContainerStatuses: defaults from the old
// statuses, then the runtime's newest container as the state and the one
// before as lastState, then the kubelet's waiting reasons for containers it
// would (re)start.
func convertStatuses(pod *corev1.Pod, specs []corev1.Container, isInit, hasInit bool,
	runtime map[string][]*sandbox.ContainerStatus, oldList []corev1.ContainerStatus, waiting map[string]Waiting) []corev1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	old := make(map[string]*corev1.ContainerStatus, len(oldList))
	for i := range oldList {
		old[oldList[i].Name] = &oldList[i]
	}
	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}

	statuses := make(map[string]*corev1.ContainerStatus, len(specs))
	for i := range specs {
		c := &specs[i]
		st := &corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: defaultReason}}}
		if o := old[c.Name]; o != nil {
			if o.State.Terminated != nil {
				st = o.DeepCopy()
			} else {
				st.RestartCount = o.RestartCount
				st.LastTerminationState = *o.LastTerminationState.DeepCopy()
			}
		}
		statuses[c.Name] = st
	}

	for i := range specs {
		c := &specs[i]
		st := statuses[c.Name]
		rs := runtime[c.Name]
		if len(rs) == 0 {
			// A container that was running and vanished did terminate,
			// even if nobody saw how: say so rather than going back to
			// waiting, which would make the pod Pending again.
			if o := old[c.Name]; o != nil && o.State.Running != nil && st.State.Waiting != nil &&
				st.State.Waiting.Reason == defaultReason && st.LastTerminationState.Terminated == nil {
				st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
					Reason: ReasonContainerStatusUnknown, Message: msgLostRunning, ExitCode: exitCodeLost,
				}
				if pod.DeletionTimestamp == nil {
					st.RestartCount++
				}
			}
			continue
		}
		cur := convertContainer(rs[0], c, old[c.Name])
		switch o := old[c.Name]; {
		case len(rs) > 1:
			cur.LastTerminationState = convertContainer(rs[1], c, nil).State
		case o != nil && o.ContainerID == cur.ContainerID:
			cur.LastTerminationState = *o.LastTerminationState.DeepCopy()
		case o != nil && o.ContainerID != "" && o.State.Terminated != nil:
			// The previous container is gone from the runtime; what we
			// last saw of it is its final state.
			cur.LastTerminationState = *o.State.DeepCopy()
		}
		statuses[c.Name] = &cur
	}

	for i := range specs {
		c := &specs[i]
		var latest *sandbox.ContainerStatus
		if rs := runtime[c.Name]; len(rs) > 0 {
			latest = rs[0]
		}
		if isInit && latest != nil && latest.State == sandbox.ContainerStateExited && latest.ExitCode == 0 {
			continue // a succeeded init container is not run again
		}
		w, ok := waiting[c.Name]
		if !ok || !shouldRestart(pod, c, latest) {
			continue
		}
		st := statuses[c.Name]
		if st.State.Terminated != nil {
			st.LastTerminationState = st.State
		}
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
	}

	out := make([]corev1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		st := statuses[c.Name]
		if o := old[c.Name]; mustStayTerminated(pod, c, isInit, o) && st.State.Terminated == nil {
			st = o.DeepCopy() // terminated for good: never back
		}
		out = append(out, *st)
	}
	if !isInit {
		slices.SortStableFunc(out, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

// convertContainer turns one runtime container into a status.
func convertContainer(cs *sandbox.ContainerStatus, spec *corev1.Container, old *corev1.ContainerStatus) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.Attempt),
		Image:        cs.Image,
		ImageID:      cs.ImageID,
		ContainerID:  ContainerID(cs.ID),
	}
	if st.Image == "" {
		st.Image = spec.Image
	}
	switch {
	case cs.State == sandbox.ContainerStateRunning:
		st.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
	case cs.State == sandbox.ContainerStateExited:
		reason := cs.Reason
		if reason == "" {
			reason = sandbox.ReasonCompleted
			if cs.ExitCode != 0 {
				reason = sandbox.ReasonError
			}
		}
		st.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode:    cs.ExitCode,
			Reason:      reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: st.ContainerID,
		}
	case cs.State == sandbox.ContainerStateUnknown && old != nil && old.State.Running != nil:
		// It was running and the runtime cannot tell what became of it:
		// it ran and ended, which is not the same as never having run.
		st.State.Terminated = &corev1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: msgLostTerminated, ExitCode: exitCodeLost,
		}
		st.RestartCount = old.RestartCount + 1
	default: // created, or unknown: waiting to run
		st.State.Waiting = &corev1.ContainerStateWaiting{}
	}
	return st
}

// shouldRestart says the kubelet would start the container on its next
// sync (so a waiting reason applies to it).
func shouldRestart(pod *corev1.Pod, c *corev1.Container, latest *sandbox.ContainerStatus) bool {
	switch {
	case pod.DeletionTimestamp != nil:
		return false
	case latest == nil:
		return true
	case latest.State == sandbox.ContainerStateRunning:
		return false
	case latest.State == sandbox.ContainerStateUnknown, latest.State == sandbox.ContainerStateCreated:
		return true
	case isRestartable(c):
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return latest.ExitCode != 0
	}
	return true
}

// mustStayTerminated says old is a terminated state the restart policy
// does not allow to leave.
func mustStayTerminated(pod *corev1.Pod, c *corev1.Container, isInit bool, old *corev1.ContainerStatus) bool {
	if old == nil || old.State.Terminated == nil {
		return false
	}
	policy := pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyAlways || policy == "" || (isInit && isRestartable(c)) {
		return false
	}
	return !(old.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure)
}
