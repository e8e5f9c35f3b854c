package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container state builders.
func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}
}
func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}
func terminated(reason string, exitCode, signal int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: exitCode, Signal: signal}}
}
func lastTerminated(d time.Duration) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: ago(d)}}
}

// testPod builds a pod with app containers c0..c(n-1) and init containers
// i0..i(m-1); sidecars lists init containers with restartPolicy Always.
func testPod(apps, inits int, sidecars ...int) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: objMeta("web", 10*time.Minute), Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: "busybox"})
	}
	for i := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: "i" + string(rune('0'+i))})
	}
	for _, i := range sidecars {
		pod.Spec.InitContainers[i].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
	}
	return pod
}

func TestPodStatusMatrix(t *testing.T) {
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	readyCond := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}

	tests := []struct {
		name     string
		pod      func() *corev1.Pod
		ready    string
		status   string
		restarts string
	}{
		{"pending without statuses", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodPending
			return p
		}, "0/1", "Pending", "0"},
		{"running and ready", func() *corev1.Pod {
			p := testPod(2, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "c0", Ready: true, State: running()},
				{Name: "c1", Ready: true, State: running()},
			}
			return p
		}, "2/2", "Running", "0"},
		{"running but not ready", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: running()}}
			return p
		}, "0/1", "Running", "0"},
		{"container creating", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: waiting("ContainerCreating")}}
			return p
		}, "0/1", "ContainerCreating", "0"},
		{"image pull back-off", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: waiting("ImagePullBackOff")}}
			return p
		}, "0/1", "ImagePullBackOff", "0"},
		{"crash loop with last restart time", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", RestartCount: 3, State: waiting("CrashLoopBackOff"), LastTerminationState: lastTerminated(5 * time.Minute)}}
			return p
		}, "0/1", "CrashLoopBackOff", "3 (5m ago)"},
		{"restarts without a termination time", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", Ready: true, RestartCount: 2, State: running()}}
			return p
		}, "1/1", "Running", "2"},
		{"latest restart across containers", func() *corev1.Pod {
			p := testPod(2, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "c0", Ready: true, RestartCount: 1, State: running(), LastTerminationState: lastTerminated(3 * time.Hour)},
				{Name: "c1", Ready: true, RestartCount: 1, State: running(), LastTerminationState: lastTerminated(90 * time.Second)},
			}
			return p
		}, "2/2", "Running", "2 (90s ago)"},
		{"completed", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: terminated("Completed", 0, 0)}}
			return p
		}, "0/1", "Completed", "0"},
		{"terminated with error reason", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: terminated("Error", 1, 0)}}
			return p
		}, "0/1", "Error", "0"},
		{"terminated by signal without reason", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: terminated("", 137, 9)}}
			return p
		}, "0/1", "Signal:9", "0"},
		{"terminated with exit code without reason", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: terminated("", 2, 0)}}
			return p
		}, "0/1", "ExitCode:2", "0"},
		{"completed beside a ready running container with Ready condition", func() *corev1.Pod {
			p := testPod(2, 0)
			p.Status.Conditions = []corev1.PodCondition{readyCond}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "c0", State: terminated("Completed", 0, 0)},
				{Name: "c1", Ready: true, State: running()},
			}
			return p
		}, "1/2", "Running", "0"},
		{"completed beside a running container without Ready condition", func() *corev1.Pod {
			p := testPod(2, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "c0", State: terminated("Completed", 0, 0)},
				{Name: "c1", Ready: true, State: running()},
			}
			return p
		}, "1/2", "NotReady", "0"},
		{"completed beside a failed container", func() *corev1.Pod {
			p := testPod(2, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{
				{Name: "c0", State: terminated("Completed", 0, 0)},
				{Name: "c1", State: terminated("OOMKilled", 137, 0)},
			}
			return p
		}, "0/2", "OOMKilled", "0"},
		{"status reason wins over phase", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodFailed
			p.Status.Reason = "Evicted"
			return p
		}, "0/1", "Evicted", "0"},
		{"scheduling gated", func() *corev1.Pod {
			p := testPod(1, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
			return p
		}, "0/1", "SchedulingGated", "0"},
		{"first init container running", func() *corev1.Pod {
			p := testPod(1, 2)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", State: running()}, {Name: "i1", State: waiting("PodInitializing")}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: waiting("PodInitializing")}}
			return p
		}, "0/1", "Init:0/2", "0"},
		{"second init container running", func() *corev1.Pod {
			p := testPod(1, 2)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", State: terminated("Completed", 0, 0)}, {Name: "i1", State: running()}}
			return p
		}, "0/1", "Init:1/2", "0"},
		{"init container waiting to initialise", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", State: waiting("PodInitializing")}}
			return p
		}, "0/1", "Init:0/1", "0"},
		{"init container failed", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", RestartCount: 1, State: terminated("Error", 1, 0), LastTerminationState: lastTerminated(time.Minute)}}
			return p
		}, "0/1", "Init:Error", "1 (60s ago)"},
		{"init container crash looping", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", RestartCount: 4, State: waiting("CrashLoopBackOff"), LastTerminationState: lastTerminated(20 * time.Minute)}}
			return p
		}, "0/1", "Init:CrashLoopBackOff", "4 (20m ago)"},
		{"init container killed by signal", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", State: terminated("", 137, 9)}}
			return p
		}, "0/1", "Init:Signal:9", "0"},
		{"init container exit code", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", State: terminated("", 3, 0)}}
			return p
		}, "0/1", "Init:ExitCode:3", "0"},
		{"init restarts stop counting once initialised", func() *corev1.Pod {
			p := testPod(1, 1)
			p.Status.Conditions = []corev1.PodCondition{initialized}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", RestartCount: 4, State: terminated("Completed", 0, 0), LastTerminationState: lastTerminated(time.Hour)}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", Ready: true, State: running()}}
			return p
		}, "1/1", "Running", "0"},
		{"sidecar counts as a ready container", func() *corev1.Pod {
			p := testPod(1, 2, 1)
			p.Status.Conditions = []corev1.PodCondition{initialized}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i0", State: terminated("Completed", 0, 0)},
				{Name: "i1", Ready: true, Started: ptr(true), State: running()},
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", Ready: true, State: running()}}
			return p
		}, "2/2", "Running", "0"},
		{"sidecar restarts count after initialisation", func() *corev1.Pod {
			p := testPod(1, 1, 0)
			p.Status.Conditions = []corev1.PodCondition{initialized}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i0", Ready: true, Started: ptr(true), RestartCount: 2, State: running(), LastTerminationState: lastTerminated(2 * time.Minute)}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", Ready: true, RestartCount: 1, State: running(), LastTerminationState: lastTerminated(time.Hour)}}
			return p
		}, "2/2", "Running", "3 (2m ago)"},
		{"started sidecar does not block the next init container", func() *corev1.Pod {
			p := testPod(1, 2, 0)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "i0", Started: ptr(true), State: running()},
				{Name: "i1", State: running()},
			}
			return p
		}, "0/2", "Init:1/2", "0"},
		{"terminating", func() *corev1.Pod {
			p := testPod(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", Ready: true, State: running()}}
			return p
		}, "1/1", "Terminating", "0"},
		{"deleted after success keeps its reason", func() *corev1.Pod {
			p := testPod(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.Phase = corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: terminated("Completed", 0, 0)}}
			return p
		}, "0/1", "Completed", "0"},
		{"lost node", func() *corev1.Pod {
			p := testPod(1, 0)
			p.DeletionTimestamp = agoPtr(time.Second)
			p.Status.Reason = "NodeLost"
			return p
		}, "0/1", "Unknown", "0"},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := cellsOf(t, p, tt.pod())
			assert.Equal(t, []any{"web", tt.ready, tt.status, tt.restarts, "10m"}, cells[:5])
		})
	}
}

func TestPodWideCellsAndConditions(t *testing.T) {
	p := newTestPrinter(t)

	pod := testPod(1, 0)
	pod.Spec.NodeName = "node-1"
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/a"}, {ConditionType: "example.com/b"}}
	pod.Status.NominatedNodeName = "node-2"
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: "example.com/a", Status: corev1.ConditionTrue},
		{Type: "example.com/b", Status: corev1.ConditionFalse},
	}
	row := rowOf(t, p, pod)
	assert.Equal(t, []any{"10.0.0.5", "node-1", "node-2", "1/2"}, row.Cells[5:])
	assert.Nil(t, row.Conditions)

	bare := testPod(1, 0)
	assert.Equal(t, []any{"<none>", "<none>", "<none>", "<none>"}, cellsOf(t, p, bare)[5:])

	bare.CreationTimestamp = metav1.Time{}
	assert.Equal(t, "<unknown>", cellsOf(t, p, bare)[4], "zero creation time")

	for phase, reason := range map[corev1.PodPhase]string{corev1.PodSucceeded: "Succeeded", corev1.PodFailed: "Failed"} {
		done := testPod(1, 0)
		done.Status.Phase = phase
		conds := rowOf(t, p, done).Conditions
		if assert.Len(t, conds, 1) {
			assert.Equal(t, metav1.RowCompleted, conds[0].Type)
			assert.Equal(t, metav1.ConditionTrue, conds[0].Status)
			assert.Equal(t, reason, conds[0].Reason)
		}
	}
}

func TestPodColumns(t *testing.T) {
	p := newTestPrinter(t)
	cols := p.ColumnDefinitions(&corev1.Pod{})
	assert.Equal(t, []string{"Name", "Ready", "Status", "Restarts", "Age", "+IP", "+Node", "+Nominated Node", "+Readiness Gates"}, columnNames(cols))
	assert.Equal(t, "name", cols[0].Format)
	assert.NotEmpty(t, cols[0].Description)
	assert.Equal(t, "string", cols[3].Type, "RESTARTS carries the last restart time")
}
