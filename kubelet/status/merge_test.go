package status

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/sandbox"
)

func mt(sec int) metav1.Time { return metav1.NewTime(at(sec)) }

func TestMergeConditionTimes(t *testing.T) {
	prev := corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", LastTransitionTime: mt(10)},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(5)},
	}}
	next := corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}}
	now := at(60).Add(700 * time.Millisecond)
	got := Merge(prev, next, now)
	assert.Equal(t, []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(60)},       // changed: now, to the second
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)},    // unchanged: kept
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: mt(60)}, // unchanged but never set
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(60)},
		{Type: "example.com/lb", Status: corev1.ConditionTrue, LastTransitionTime: mt(5)}, // someone else's: kept
	}, got.Conditions)
}

func TestMergeNeverRegresses(t *testing.T) {
	start := mt(0)
	last := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	prev := corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &start, QOSClass: corev1.PodQOSBurstable,
		PodIP: "10.1.0.5", PodIPs: []corev1.PodIP{{IP: "10.1.0.5"}},
		HostIP: "192.168.1.10", HostIPs: []corev1.HostIP{{IP: "192.168.1.10"}},
		ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu"}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", RestartCount: 4, LastTerminationState: last}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 1}},
	}
	later := metav1.NewTime(at(30))
	next := corev1.PodStatus{
		Phase: corev1.PodRunning, StartTime: &later, QOSClass: corev1.PodQOSBestEffort,
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", RestartCount: 2}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", RestartCount: 3}},
	}
	got := Merge(prev, next, at(60))
	assert.Equal(t, &start, got.StartTime)
	assert.Equal(t, corev1.PodQOSBurstable, got.QOSClass)
	assert.Equal(t, "10.1.0.5", got.PodIP)
	assert.Equal(t, []corev1.PodIP{{IP: "10.1.0.5"}}, got.PodIPs)
	assert.Equal(t, "192.168.1.10", got.HostIP)
	assert.Equal(t, []corev1.PodResourceClaimStatus{{Name: "gpu"}}, got.ResourceClaimStatuses)
	assert.Equal(t, int32(4), got.ContainerStatuses[0].RestartCount)
	assert.Equal(t, last, got.ContainerStatuses[0].LastTerminationState)
	assert.Equal(t, int32(3), got.InitContainerStatuses[0].RestartCount)

	got = Merge(corev1.PodStatus{}, corev1.PodStatus{}, at(60).Add(time.Millisecond))
	assert.Equal(t, mt(60), *got.StartTime, "a first status starts now")
}

func TestMergeTerminalPhase(t *testing.T) {
	readyConds := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(1)},
	}
	tests := []struct {
		name       string
		prev, next corev1.PodStatus
		phase      corev1.PodPhase
		reason     string
		ready      string
	}{
		{name: "terminal stays", prev: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "m"},
			next: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyConds}, phase: corev1.PodFailed, reason: "Evicted", ready: "False/PodFailed/"},
		{name: "succeeded stays", prev: corev1.PodStatus{Phase: corev1.PodSucceeded},
			next: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: readyConds}, phase: corev1.PodSucceeded, ready: "False/PodCompleted/"},
		{name: "to terminal: ready forced false", prev: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyConds},
			next: corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: readyConds}, phase: corev1.PodSucceeded, ready: "False/PodCompleted/"},
		{name: "running to pending allowed", prev: corev1.PodStatus{Phase: corev1.PodRunning},
			next: corev1.PodStatus{Phase: corev1.PodPending, Conditions: readyConds}, phase: corev1.PodPending, ready: "True//"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.prev, tt.next, at(60))
			assert.Equal(t, tt.phase, got.Phase)
			assert.Equal(t, tt.reason, got.Reason)
			assert.Equal(t, tt.ready, condString(cond(got, corev1.PodReady)))
			assert.Equal(t, tt.ready, condString(cond(got, corev1.ContainersReady)))
		})
	}
}

func TestMergeNormalizes(t *testing.T) {
	msg := strings.Repeat("m", 10000)
	next := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(5).Add(999 * time.Millisecond))}}},
		{Name: "a", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg,
			StartedAt: metav1.NewTime(at(1).Add(time.Nanosecond)), FinishedAt: metav1.NewTime(at(2).Add(time.Microsecond))}}},
	}}
	got := Merge(corev1.PodStatus{}, next, at(0))
	require.Equal(t, "a", got.ContainerStatuses[0].Name)
	a := got.ContainerStatuses[0].State.Terminated
	assert.Equal(t, mt(1), a.StartedAt)
	assert.Equal(t, mt(2), a.FinishedAt)
	assert.Len(t, a.Message, 12<<10/2)
	assert.Equal(t, mt(5), got.ContainerStatuses[1].State.Running.StartedAt)
	assert.Len(t, next.ContainerStatuses[1].State.Terminated.Message, 10000, "next is not modified")
}

func TestNeedsUpdate(t *testing.T) {
	base := Merge(corev1.PodStatus{}, Generate(Input{
		Pod: newPod(), Sandbox: readySandbox("10.1.0.5"),
		Containers: []*sandbox.ContainerStatus{running("app", 0, 0)}, NodeIPs: nodeIPs("192.168.1.10"),
	}), at(2))
	mod := func(f func(s *corev1.PodStatus)) corev1.PodStatus {
		s := *base.DeepCopy()
		f(&s)
		return s
	}
	tests := []struct {
		name string
		next corev1.PodStatus
		want bool
	}{
		{"identical", base, false},
		{"only transition times", mod(func(s *corev1.PodStatus) {
			for i := range s.Conditions {
				s.Conditions[i].LastTransitionTime = mt(99)
			}
		}), false},
		{"sub-second time difference", mod(func(s *corev1.PodStatus) {
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(at(1).Add(300 * time.Millisecond))
		}), false},
		{"someone else's condition", mod(func(s *corev1.PodStatus) {
			s.Conditions = append(s.Conditions, corev1.PodCondition{Type: "example.com/lb", Status: corev1.ConditionFalse})
		}), false},
		{"ready flips", mod(func(s *corev1.PodStatus) {
			s.ContainerStatuses[0].Ready = false
			c := findCondition(s.Conditions, corev1.PodReady)
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, ReasonContainersNotReady, "containers with unready status: [app]"
		}), true},
		{"condition message", mod(func(s *corev1.PodStatus) { findCondition(s.Conditions, corev1.PodScheduled).Message = "x" }), true},
		{"condition missing", mod(func(s *corev1.PodStatus) { s.Conditions = s.Conditions[1:] }), true},
		{"restart count", mod(func(s *corev1.PodStatus) { s.ContainerStatuses[0].RestartCount++ }), true},
		{"phase", mod(func(s *corev1.PodStatus) { s.Phase = corev1.PodSucceeded }), true},
		{"pod IP", mod(func(s *corev1.PodStatus) { s.PodIP = "10.1.0.6" }), true},
		{"shared DisruptionTarget", mod(func(s *corev1.PodStatus) {
			s.Conditions = append(s.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})
		}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NeedsUpdate(base, tt.next))
		})
	}
}

func TestGenerateMergeLifecycle(t *testing.T) {
	// A pod followed through its life, each status merged onto the last:
	// transition times move only with the condition's status.
	pod := newPod()
	in := Input{Pod: pod, NodeIPs: nodeIPs("192.168.1.10")}
	s1 := Merge(pod.Status, Generate(in), at(0))
	assert.Equal(t, corev1.PodPending, s1.Phase)
	assert.Equal(t, mt(0), *s1.StartTime)

	in.Old, in.Sandbox = &s1, readySandbox("10.1.0.5")
	in.Containers = []*sandbox.ContainerStatus{running("app", 0, 1)}
	in.Probes = fakeProbes{notReady: map[string]bool{"app": true}}
	s2 := Merge(s1, Generate(in), at(3))
	assert.True(t, NeedsUpdate(s1, s2))
	assert.Equal(t, corev1.PodRunning, s2.Phase)
	assert.Equal(t, mt(3), cond(s2, corev1.PodReadyToStartContainers).LastTransitionTime)
	assert.Equal(t, mt(0), cond(s2, corev1.PodReady).LastTransitionTime, "still not ready")
	assert.Equal(t, mt(0), cond(s2, corev1.PodScheduled).LastTransitionTime)

	s2b := Merge(s2, Generate(Input{Pod: pod, Old: &s2, Sandbox: in.Sandbox, Containers: in.Containers, Probes: in.Probes, NodeIPs: in.NodeIPs}), at(4))
	assert.False(t, NeedsUpdate(s2, s2b), "nothing new: coalesced")

	in.Old, in.Probes = &s2, nil
	s3 := Merge(s2, Generate(in), at(9))
	assert.Equal(t, "True//", condString(cond(s3, corev1.PodReady)))
	assert.Equal(t, mt(9), cond(s3, corev1.PodReady).LastTransitionTime)
	assert.Equal(t, mt(0), *s3.StartTime)
}

// truncSeconds is Rfc3339Copy: the same instant, zone and location for
// times in UTC, local time, other zones, with and without monotonic
// readings and sub-second parts, the zero time and years out of RFC 3339's
// range.
func TestTruncSecondsIsRfc3339Copy(t *testing.T) {
	now := time.Now() // with a monotonic reading
	times := []time.Time{
		{}, now, now.UTC(), now.Local(), now.Round(0), now.Truncate(time.Second),
		now.In(time.FixedZone("east", 2*3600)), now.In(time.FixedZone("zero", 0)),
		time.Unix(0, 0), time.Unix(-1, 999), time.Date(9999, 12, 31, 23, 59, 59, 999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 5, time.UTC),
	}
	if loc, err := time.LoadLocation("Europe/Berlin"); err == nil {
		times = append(times, now.In(loc), time.Date(2024, 1, 1, 0, 0, 0, 0, loc))
	}
	for _, tm := range times {
		want := metav1.NewTime(tm).Rfc3339Copy()
		got := metav1.NewTime(tm)
		truncSeconds(&got)
		assert.Equal(t, want.Time, got.Time, "%v", tm)
		assert.Equal(t, want.Location().String(), got.Location().String(), "%v", tm)
		assert.True(t, want.Time == got.Time, "identical values for %v", tm)
	}
}

// NeedsUpdate answers as comparing fully normalized copies would, whether
// a status is taken as it is (already normalized) or copied and
// normalized: statuses as the API returns them (local times), with
// sub-second times, unsorted containers, long termination messages,
// times in other zones.
func TestNeedsUpdateAsNormalizedCopies(t *testing.T) {
	reference := func(prev, next corev1.PodStatus) bool {
		a, b := prev.DeepCopy(), next.DeepCopy()
		normalize(a)
		normalize(b)
		ca, cb := kubeletConditions(a.Conditions), kubeletConditions(b.Conditions)
		if len(ca) != len(cb) {
			return true
		}
		for typ, x := range cb {
			y, ok := ca[typ]
			if !ok || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
				return true
			}
		}
		a.Conditions, b.Conditions = nil, nil
		return !equality.Semantic.DeepEqual(a, b)
	}
	two := newPod()
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "b-side"})
	exited := running("b-side", 0, 1)
	exited.State, exited.ExitCode, exited.FinishedAt = sandbox.ContainerStateExited, 1, at(5)
	base := Merge(corev1.PodStatus{}, Generate(Input{
		Pod: two, Sandbox: readySandbox("10.1.0.5"),
		Containers: []*sandbox.ContainerStatus{running("app", 0, 0), exited}, NodeIPs: nodeIPs("192.168.1.10"),
	}), at(2))
	require.True(t, comparesNormalized(&base), "Merge normalizes")
	variants := map[string]func(s *corev1.PodStatus){
		"as is": func(*corev1.PodStatus) {},
		"local times, as decoded from the API": func(s *corev1.PodStatus) {
			s.StartTime = &metav1.Time{Time: s.StartTime.Local()}
			for i := range s.Conditions {
				s.Conditions[i].LastTransitionTime = metav1.NewTime(s.Conditions[i].LastTransitionTime.Local())
			}
		},
		"another zone": func(s *corev1.PodStatus) {
			s.StartTime = &metav1.Time{Time: s.StartTime.In(time.FixedZone("east", 3600))}
		},
		"sub-second": func(s *corev1.PodStatus) {
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(at(1).Add(300 * time.Millisecond))
		},
		"unsorted": func(s *corev1.PodStatus) {
			s.ContainerStatuses[0], s.ContainerStatuses[1] = s.ContainerStatuses[1], s.ContainerStatuses[0]
		},
		"long message": func(s *corev1.PodStatus) {
			for i := range s.ContainerStatuses {
				if term := s.ContainerStatuses[i].State.Terminated; term != nil {
					term.Message = strings.Repeat("x", maxTerminationMessages)
				}
			}
		},
		"other long message": func(s *corev1.PodStatus) {
			for i := range s.ContainerStatuses {
				if term := s.ContainerStatuses[i].State.Terminated; term != nil {
					term.Message = strings.Repeat("x", maxTerminationMessages-1) + "y"
				}
			}
		},
		"restart count": func(s *corev1.PodStatus) { s.ContainerStatuses[0].RestartCount++ },
		"phase":         func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed },
	}
	for pn, pf := range variants {
		for nn, nf := range variants {
			prev, next := *base.DeepCopy(), *base.DeepCopy()
			pf(&prev)
			nf(&next)
			keepPrev, keepNext := *prev.DeepCopy(), *next.DeepCopy()
			assert.Equal(t, reference(prev, next), NeedsUpdate(prev, next), "%s over %s", nn, pn)
			assert.Equal(t, keepPrev, prev, "prev is not modified")
			assert.Equal(t, keepNext, next, "next is not modified")
		}
	}
}
