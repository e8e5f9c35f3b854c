package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/sandbox"
)

func terminated(code int32, reason string, id string, started, finished int) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, ContainerID: id,
		StartedAt: metav1.NewTime(at(started)), FinishedAt: metav1.NewTime(at(finished))}
}

func TestContainerStates(t *testing.T) {
	crash := CrashLoopBackOffMessage(10_000_000_000, "app", newPod())
	never := withPolicy(newPod(), corev1.RestartPolicyNever)
	onFailure := withPolicy(newPod(), corev1.RestartPolicyOnFailure)
	deleting := newPod()
	now := metav1.NewTime(at(100))
	deleting.DeletionTimestamp = &now
	unknownState := running("app", 0, 0)
	unknownState.State = sandbox.ContainerStateUnknown
	created := running("app", 0, 0)
	created.State = sandbox.ContainerStateCreated
	noReason := exited("app", 0, 0, 2, "")
	noImage := running("app", 0, 0)
	noImage.Image = ""
	oldRunning := &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 2, ContainerID: "podkit://app-2",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(0))}}}}}
	oldDone := &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "podkit://app-0",
		State: corev1.ContainerState{Terminated: terminated(0, "Completed", "podkit://app-0", 1, 6)}}}}
	oldCrashed := &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 1, ContainerID: "podkit://app-1",
		State:                corev1.ContainerState{Terminated: terminated(1, "Error", "podkit://app-1", 11, 16)},
		LastTerminationState: corev1.ContainerState{Terminated: terminated(1, "Error", "podkit://app-0", 1, 6)}}}}

	tests := []struct {
		name      string
		in        Input
		state     corev1.ContainerState
		last      corev1.ContainerState
		restarts  int32
		id, image string
		phase     corev1.PodPhase
	}{
		{name: "running", in: Input{Pod: newPod(), Containers: []*sandbox.ContainerStatus{running("app", 0, 0)}},
			state: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "OOMKilled", in: Input{Pod: newPod(), Containers: []*sandbox.ContainerStatus{exited("app", 0, 0, 137, "OOMKilled")}},
			state: corev1.ContainerState{Terminated: terminated(137, "OOMKilled", "podkit://app-0", 1, 5)},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "exit reason defaults to Error", in: Input{Pod: never, Containers: []*sandbox.ContainerStatus{noReason}},
			state: corev1.ContainerState{Terminated: terminated(2, "Error", "podkit://app-0", 1, 5)},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodFailed},
		{name: "CrashLoopBackOff: lastState is the last exit", in: Input{Pod: newPod(),
			Containers: []*sandbox.ContainerStatus{exited("app", 0, 0, 1, "Error"), exited("app", 1, 10, 1, "Error")},
			Waiting:    map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff, Message: crash}}},
			state:    corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=app pod=web_default(uid-1)"}},
			last:     corev1.ContainerState{Terminated: terminated(1, "Error", "podkit://app-1", 11, 15)},
			restarts: 1, id: "podkit://app-1", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "restarted: lastState from the previous attempt", in: Input{Pod: newPod(),
			Containers: []*sandbox.ContainerStatus{running("app", 1, 10), exited("app", 0, 0, 137, "OOMKilled")}},
			state:    corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(11))}},
			last:     corev1.ContainerState{Terminated: terminated(137, "OOMKilled", "podkit://app-0", 1, 5)},
			restarts: 1, id: "podkit://app-1", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "restarted: previous attempt gone, lastState from the old status", in: Input{Pod: newPod(), Old: oldCrashed,
			Containers: []*sandbox.ContainerStatus{running("app", 2, 20)}},
			state:    corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(21))}},
			last:     corev1.ContainerState{Terminated: terminated(1, "Error", "podkit://app-1", 11, 16)},
			restarts: 2, id: "podkit://app-2", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "ErrImagePull before any container", in: Input{Pod: newPod(),
			Waiting: map[string]Waiting{"app": {Reason: ReasonErrImagePull, Message: "failed to pull image \"nginx:1.27\": not found"}}},
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "failed to pull image \"nginx:1.27\": not found"}},
			image: "nginx:1.27", phase: corev1.PodPending},
		{name: "ImagePullBackOff", in: Input{Pod: newPod(),
			Waiting: map[string]Waiting{"app": {Reason: ReasonImagePullBackOff, Message: ImagePullBackOffMessage("nginx:1.27")}}},
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`}},
			image: "nginx:1.27", phase: corev1.PodPending},
		{name: "CreateContainerConfigError", in: Input{Pod: newPod(),
			Waiting: map[string]Waiting{"app": {Reason: ReasonCreateContainerConfigError, Message: `secret "db" not found`}}},
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "db" not found`}},
			image: "nginx:1.27", phase: corev1.PodPending},
		{name: "waiting reason ignored for a running container", in: Input{Pod: newPod(),
			Containers: []*sandbox.ContainerStatus{running("app", 0, 0)}, Waiting: map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff}}},
			state: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "waiting reason ignored under Never", in: Input{Pod: never,
			Containers: []*sandbox.ContainerStatus{exited("app", 0, 0, 1, "Error")}, Waiting: map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff}}},
			state: corev1.ContainerState{Terminated: terminated(1, "Error", "podkit://app-0", 1, 5)},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodFailed},
		{name: "waiting reason ignored under OnFailure after success", in: Input{Pod: onFailure,
			Containers: []*sandbox.ContainerStatus{exited("app", 0, 0, 0, "Completed")}, Waiting: map[string]Waiting{"app": {Reason: ReasonCrashLoopBackOff}}},
			state: corev1.ContainerState{Terminated: terminated(0, "Completed", "podkit://app-0", 1, 5)},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodSucceeded},
		{name: "waiting reason ignored while deleting", in: Input{Pod: deleting, Waiting: map[string]Waiting{"app": {Reason: ReasonErrImagePull}}},
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			image: "nginx:1.27", phase: corev1.PodPending},
		{name: "created is waiting without reason", in: Input{Pod: newPod(), Containers: []*sandbox.ContainerStatus{created}},
			state: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}},
			id:    "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodPending},
		{name: "image from the spec when the runtime has none", in: Input{Pod: newPod(), Containers: []*sandbox.ContainerStatus{noImage}},
			state: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}},
			id:    "podkit://app-0", image: "nginx:1.27", phase: corev1.PodRunning},
		{name: "unknown after running", in: Input{Pod: newPod(), Old: oldRunning, Containers: []*sandbox.ContainerStatus{unknownState}},
			state:    corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated", ExitCode: 137}},
			restarts: 3, id: "podkit://app-0", image: "docker.io/library/nginx:1.27", phase: corev1.PodRunning},
		{name: "vanished after running", in: Input{Pod: newPod(), Old: oldRunning},
			state:    corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			last:     corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was deleted.  The container used to be Running", ExitCode: 137}},
			restarts: 3, image: "nginx:1.27", phase: corev1.PodRunning},
		{name: "vanished while deleting: no restart counted", in: Input{Pod: deleting, Old: oldRunning},
			state:    corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			last:     corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was deleted.  The container used to be Running", ExitCode: 137}},
			restarts: 2, image: "nginx:1.27", phase: corev1.PodRunning},
		{name: "terminated is kept when the runtime forgot it", in: Input{Pod: never, Old: oldDone},
			state: corev1.ContainerState{Terminated: terminated(0, "Completed", "podkit://app-0", 1, 6)},
			id:    "podkit://app-0", phase: corev1.PodSucceeded},
		{name: "terminated never goes back under Never", in: Input{Pod: never, Old: oldDone, Containers: []*sandbox.ContainerStatus{running("app", 1, 10)}},
			state: corev1.ContainerState{Terminated: terminated(0, "Completed", "podkit://app-0", 1, 6)},
			id:    "podkit://app-0", phase: corev1.PodSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Generate(tt.in)
			cs := find(s.ContainerStatuses, "app")
			assert.Equal(t, tt.state, cs.State)
			assert.Equal(t, tt.last, cs.LastTerminationState)
			assert.Equal(t, tt.restarts, cs.RestartCount)
			assert.Equal(t, tt.id, cs.ContainerID)
			assert.Equal(t, tt.image, cs.Image)
			assert.Equal(t, tt.phase, s.Phase)
		})
	}
}

func TestContainerIDs(t *testing.T) {
	assert.Equal(t, "podkit://abc", ContainerID("abc"))
	assert.Equal(t, "", ContainerID(""))
	assert.Equal(t, "abc", ParseContainerID("podkit://abc"))
	assert.Equal(t, "abc", ParseContainerID("containerd://abc"))
	assert.Equal(t, "abc", ParseContainerID("abc"))
}

func TestMessages(t *testing.T) {
	p := newPod()
	for delay, want := range map[int]string{
		10:  "back-off 10s restarting failed container=app pod=web_default(uid-1)",
		80:  "back-off 1m20s restarting failed container=app pod=web_default(uid-1)",
		300: "back-off 5m0s restarting failed container=app pod=web_default(uid-1)",
	} {
		assert.Equal(t, want, CrashLoopBackOffMessage(at(delay).Sub(t0), "app", p))
	}
	assert.Equal(t, `Back-off pulling image "nginx:bad"`, ImagePullBackOffMessage("nginx:bad"))
	assert.Equal(t, `Container image "nginx:1.27" is not present with pull policy of Never`, ErrImageNeverPullMessage("nginx:1.27"))
	assert.Equal(t, "web_default(uid-1)", PodFullName(p))
}
