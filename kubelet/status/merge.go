package status

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxTerminationMessages is the budget of all containers' termination
// messages in one pod status, split evenly between them (Kubernetes'
// MaxPodTerminationMessageLogLength).
const maxTerminationMessages = 12 << 10

// Merge folds next, a status from Generate, onto prev, the status last
// written, so that nothing regresses, and normalizes it for the API:
//
//   - a terminal phase (Succeeded, Failed) is final, with its reason and
//     message; a terminal pod's Ready and ContainersReady are False;
//   - conditions keep prev's lastTransitionTime while their status is
//     unchanged and get now when it changes (or they are new); conditions
//     of other owners that next lacks are kept;
//   - startTime is prev's, else next's, else now; qosClass is prev's;
//   - restartCount never decreases, and a lastState is not dropped;
//   - pod IPs and host IPs are not lost when next has none;
//   - resourceClaimStatuses are not the kubelet's: prev's are kept;
//   - times are truncated to seconds (what the API stores), termination
//     messages to their share of 12 KiB, and app container statuses sorted
//     by name.
func Merge(prev, next corev1.PodStatus, now time.Time) corev1.PodStatus {
	out := *next.DeepCopy()
	nowT := metav1.NewTime(now)

	if terminal(prev.Phase) && out.Phase != prev.Phase {
		out.Phase, out.Reason, out.Message = prev.Phase, prev.Reason, prev.Message
	}

	for i := range out.Conditions {
		c := &out.Conditions[i]
		c.LastTransitionTime = nowT
		if p := findCondition(prev.Conditions, c.Type); p != nil && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
			c.LastTransitionTime = p.LastTransitionTime
		}
	}
	for _, p := range prev.Conditions {
		if !ownedByKubelet[p.Type] && findCondition(out.Conditions, p.Type) == nil {
			out.Conditions = append(out.Conditions, p)
		}
	}
	if terminal(out.Phase) {
		reason := ReasonPodCompleted
		if out.Phase == corev1.PodFailed {
			reason = ReasonPodFailed
		}
		for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			if c := findCondition(out.Conditions, t); c != nil && c.Status == corev1.ConditionTrue {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionFalse, reason, "", nowT
			}
		}
	}

	switch {
	case prev.StartTime != nil && !prev.StartTime.IsZero():
		out.StartTime = prev.StartTime.DeepCopy()
	case out.StartTime == nil || out.StartTime.IsZero():
		out.StartTime = &nowT
	}
	if prev.QOSClass != "" {
		out.QOSClass = prev.QOSClass
	}
	if len(out.PodIPs) == 0 && out.PodIP == "" {
		out.PodIP, out.PodIPs = prev.PodIP, append([]corev1.PodIP(nil), prev.PodIPs...)
	}
	if len(out.HostIPs) == 0 && out.HostIP == "" {
		out.HostIP, out.HostIPs = prev.HostIP, append([]corev1.HostIP(nil), prev.HostIPs...)
	}
	out.ResourceClaimStatuses = prev.DeepCopy().ResourceClaimStatuses

	keepCounts(out.InitContainerStatuses, prev.InitContainerStatuses)
	keepCounts(out.ContainerStatuses, prev.ContainerStatuses)
	keepCounts(out.EphemeralContainerStatuses, prev.EphemeralContainerStatuses)
	normalize(&out)
	return out
}

// keepCounts makes restart counts monotonic and keeps a lastState next
// forgot.
func keepCounts(next, prev []corev1.ContainerStatus) {
	for i := range next {
		for j := range prev {
			if prev[j].Name != next[i].Name {
				continue
			}
			next[i].RestartCount = max(next[i].RestartCount, prev[j].RestartCount)
			if isEmptyState(next[i].LastTerminationState) {
				next[i].LastTerminationState = *prev[j].LastTerminationState.DeepCopy()
			}
		}
	}
}

func isEmptyState(s corev1.ContainerState) bool {
	return s.Waiting == nil && s.Running == nil && s.Terminated == nil
}

func findCondition(conds []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// normalize truncates times to seconds, as they come back from the API,
// caps termination messages and sorts app container statuses by name.
func normalize(s *corev1.PodStatus) {
	perMessage := messageShare(s)
	trunc := truncSeconds
	state := func(c *corev1.ContainerState) {
		if c.Running != nil {
			trunc(&c.Running.StartedAt)
		}
		if c.Terminated != nil {
			trunc(&c.Terminated.StartedAt)
			trunc(&c.Terminated.FinishedAt)
			if len(c.Terminated.Message) > perMessage {
				c.Terminated.Message = c.Terminated.Message[:perMessage]
			}
		}
	}
	if s.StartTime != nil {
		trunc(s.StartTime)
	}
	for i := range s.Conditions {
		trunc(&s.Conditions[i].LastProbeTime)
		trunc(&s.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	byName := func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(s.ContainerStatuses, byName)
	slices.SortStableFunc(s.EphemeralContainerStatuses, byName)
}

// messageShare is each container's share of maxTerminationMessages in s.
func messageShare(s *corev1.PodStatus) int {
	n := len(s.ContainerStatuses) + len(s.InitContainerStatuses) + len(s.EphemeralContainerStatuses)
	if n == 0 {
		return maxTerminationMessages
	}
	return maxTerminationMessages / n
}

// truncSeconds sets t to t.Rfc3339Copy(): the time the API would return
// for it, truncated to the second, in UTC when its zone is (a fixed zone
// for other offsets). Times in zones at offset zero, like every time the
// kubelet makes on a UTC node, are computed directly; formatting and
// parsing a string (several allocations) is left to other zones and to
// years RFC 3339 cannot write, which Rfc3339Copy turns into the zero time.
func truncSeconds(t *metav1.Time) {
	if _, offset := t.Zone(); offset == 0 {
		if y := t.Year(); y >= 0 && y <= 9999 {
			t.Time = time.Unix(t.Unix(), 0).UTC()
			return
		}
	}
	*t = t.Rfc3339Copy()
}

// NeedsUpdate says writing next over prev (the status the API server has)
// would change something the kubelet owns. Conditions of other owners,
// lastTransitionTime and lastProbeTime and sub-second times are ignored,
// so a status regenerated without news coalesces into no write.
func NeedsUpdate(prev, next corev1.PodStatus) bool {
	a, b := normalized(&prev), normalized(&next)
	ca, cb := kubeletConditions(a.Conditions), kubeletConditions(b.Conditions)
	if len(ca) != len(cb) {
		return true
	}
	for t, x := range cb {
		y, ok := ca[t]
		if !ok || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return true
		}
	}
	a.Conditions, b.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

// normalized returns s normalized for comparison: s itself (a shallow
// copy) when normalize would change nothing the semantic comparison sees,
// as for statuses Merge made; otherwise a normalized deep copy.
func normalized(s *corev1.PodStatus) *corev1.PodStatus {
	if comparesNormalized(s) {
		c := *s
		return &c
	}
	c := s.DeepCopy()
	normalize(c)
	return c
}

// comparesNormalized says normalize(s) is semantically equal to s: its
// times are whole seconds that RFC 3339 writes exactly (normalize changes
// only their location, which the semantic comparison ignores), its
// termination messages are within their share and its app container
// statuses in order.
func comparesNormalized(s *corev1.PodStatus) bool {
	exact := func(t *metav1.Time) bool {
		if t.IsZero() {
			return true
		}
		_, offset := t.Zone()
		y := t.Year()
		return t.Nanosecond() == 0 && offset%60 == 0 && y >= 0 && y <= 9999
	}
	perMessage := messageShare(s)
	state := func(c *corev1.ContainerState) bool {
		if c.Running != nil && !exact(&c.Running.StartedAt) {
			return false
		}
		if t := c.Terminated; t != nil && (!exact(&t.StartedAt) || !exact(&t.FinishedAt) || len(t.Message) > perMessage) {
			return false
		}
		return true
	}
	if s.StartTime != nil && !exact(s.StartTime) {
		return false
	}
	for i := range s.Conditions {
		if !exact(&s.Conditions[i].LastProbeTime) || !exact(&s.Conditions[i].LastTransitionTime) {
			return false
		}
	}
	for _, list := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			if !state(&list[i].State) || !state(&list[i].LastTerminationState) {
				return false
			}
		}
	}
	byName := func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	return slices.IsSortedFunc(s.ContainerStatuses, byName) && slices.IsSortedFunc(s.EphemeralContainerStatuses, byName)
}

func kubeletConditions(conds []corev1.PodCondition) map[corev1.PodConditionType]corev1.PodCondition {
	m := make(map[corev1.PodConditionType]corev1.PodCondition, len(conds))
	for _, c := range conds {
		if ownedByKubelet[c.Type] || sharedWithKubelet[c.Type] {
			m[c.Type] = c
		}
	}
	return m
}
