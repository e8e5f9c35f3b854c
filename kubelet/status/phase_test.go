package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/sandbox"
)

func TestPhaseAndConditionsWithInitContainers(t *testing.T) {
	sb := readySandbox("10.1.0.5")
	pod := func() *corev1.Pod { return withInit(newPod(), "init1", "init2") }
	never := func() *corev1.Pod { return withPolicy(pod(), corev1.RestartPolicyNever) }
	done := func(name string) *sandbox.ContainerStatus { return exited(name, 0, 0, 0, "Completed") }
	runScenarios(t, []scenario{
		{
			name:  "first init running",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{running("init1", 0, 0)}},
			phase: corev1.PodPending,
			conds: map[corev1.PodConditionType]string{
				corev1.PodReadyToStartContainers: "True//",
				corev1.PodInitialized:            "False/ContainersNotInitialized/containers with incomplete status: [init1 init2]",
				corev1.PodReady:                  "False/ContainersNotReady/containers with unready status: [app]",
				corev1.ContainersReady:           "False/ContainersNotReady/containers with unready status: [app]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.Equal(t, "PodInitializing", find(s.ContainerStatuses, "app").State.Waiting.Reason)
				assert.Equal(t, "PodInitializing", find(s.InitContainerStatuses, "init2").State.Waiting.Reason)
				i1 := find(s.InitContainerStatuses, "init1")
				assert.False(t, i1.Ready)
				assert.Equal(t, ptrBool(true), i1.Started)
				assert.Equal(t, []string{"init1", "init2"}, []string{s.InitContainerStatuses[0].Name, s.InitContainerStatuses[1].Name})
			},
		},
		{
			name:  "inits done, app starting",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done("init1"), done("init2")}},
			phase: corev1.PodPending,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized: "True//",
				corev1.PodReady:       "False/ContainersNotReady/containers with unready status: [app]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				i1 := find(s.InitContainerStatuses, "init1")
				assert.True(t, i1.Ready)
				assert.Equal(t, ptrBool(false), i1.Started)
				assert.Equal(t, "Completed", i1.State.Terminated.Reason)
			},
		},
		{
			name:  "inits done, app running",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done("init1"), done("init2"), running("app", 0, 10)}},
			phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized: "True//",
				corev1.PodReady:       "True//",
			},
		},
		{
			name: "init failing under Always: CrashLoopBackOff, still Pending",
			in: Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{exited("init1", 0, 0, 1, "Error")},
				Waiting: map[string]Waiting{"init1": {Reason: ReasonCrashLoopBackOff, Message: "back-off 10s restarting failed container=init1 pod=web_default(uid-1)"}}},
			phase: corev1.PodPending,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized: "False/ContainersNotInitialized/containers with incomplete status: [init1 init2]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				i1 := find(s.InitContainerStatuses, "init1")
				assert.Equal(t, "CrashLoopBackOff", i1.State.Waiting.Reason)
				assert.Equal(t, "Error", i1.LastTerminationState.Terminated.Reason)
			},
		},
		{
			name:  "init failed under Never: Failed",
			in:    Input{Pod: never(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{exited("init1", 0, 0, 1, "Error")}},
			phase: corev1.PodFailed,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized:  "False/ContainersNotInitialized/containers with incomplete status: [init1 init2]",
				corev1.PodReady:        "False/PodFailed/",
				corev1.ContainersReady: "False/PodFailed/",
			},
		},
		{
			name:  "succeeded init container is not restarted by a waiting reason",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done("init1")}, Waiting: map[string]Waiting{"init1": {Reason: ReasonCrashLoopBackOff}}},
			phase: corev1.PodPending,
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.NotNil(t, find(s.InitContainerStatuses, "init1").State.Terminated)
			},
		},
		{
			name:  "no container statuses known yet",
			in:    Input{Pod: pod()},
			phase: corev1.PodPending,
			conds: map[corev1.PodConditionType]string{
				corev1.PodReadyToStartContainers: "False//",
				corev1.PodInitialized:            "False/ContainersNotInitialized/containers with incomplete status: [init1 init2]",
			},
		},
	})
}

func TestPhaseCompletion(t *testing.T) {
	sb := readySandbox("10.1.0.5")
	static := newPod("a", "b")
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		cs       []*sandbox.ContainerStatus
		terminal bool
		phase    corev1.PodPhase
		conds    map[corev1.PodConditionType]string
	}{
		{name: "Never, all succeeded", pod: withPolicy(newPod("a", "b"), corev1.RestartPolicyNever),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed"), exited("b", 0, 0, 0, "Completed")}, phase: corev1.PodSucceeded,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized:  "True/PodCompleted/",
				corev1.PodReady:        "False/PodCompleted/",
				corev1.ContainersReady: "False/PodCompleted/",
			}},
		{name: "Never, one failed", pod: withPolicy(newPod("a", "b"), corev1.RestartPolicyNever),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed"), exited("b", 0, 0, 1, "Error")}, phase: corev1.PodFailed,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized: "True//",
				corev1.PodReady:       "False/PodFailed/",
			}},
		{name: "Never, one still running", pod: withPolicy(newPod("a", "b"), corev1.RestartPolicyNever),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 1, "Error"), running("b", 0, 0)}, phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodReady: "False/ContainersNotReady/containers with unready status: [a]",
			}},
		{name: "OnFailure, all succeeded", pod: withPolicy(newPod("a"), corev1.RestartPolicyOnFailure),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed")}, phase: corev1.PodSucceeded},
		{name: "OnFailure, failed: restarting", pod: withPolicy(newPod("a"), corev1.RestartPolicyOnFailure),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 1, "Error")}, phase: corev1.PodRunning},
		{name: "Always, succeeded: restarting", pod: newPod("a"),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed")}, phase: corev1.PodRunning},
		{name: "empty policy is Always", pod: withPolicy(newPod("a"), ""),
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed")}, phase: corev1.PodRunning},
		{name: "Always, terminal pod succeeded", pod: newPod("a", "b"), terminal: true,
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed"), exited("b", 0, 0, 0, "Completed")}, phase: corev1.PodSucceeded},
		{name: "Always, terminal pod failed", pod: newPod("a", "b"), terminal: true,
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed"), exited("b", 0, 0, 143, "Error")}, phase: corev1.PodFailed},
		{name: "static pods never turn terminal by themselves", pod: static, terminal: true,
			cs: []*sandbox.ContainerStatus{exited("a", 0, 0, 0, "Completed"), exited("b", 0, 0, 0, "Completed")}, phase: corev1.PodRunning},
		{name: "one container unknown", pod: newPod("a", "b"),
			cs: []*sandbox.ContainerStatus{running("a", 0, 0)}, phase: corev1.PodPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Generate(Input{Pod: tt.pod, Sandbox: sb, Containers: tt.cs, Terminal: tt.terminal})
			assert.Equal(t, tt.phase, s.Phase)
			for typ, want := range tt.conds {
				assert.Equal(t, want, condString(cond(s, typ)), "condition %s", typ)
			}
		})
	}
}

func TestPhaseWithSidecars(t *testing.T) {
	sb := readySandbox("10.1.0.5")
	pod := func() *corev1.Pod { return withSidecar(withInit(newPod(), "init"), "proxy") }
	done := exited("init", 0, 0, 0, "Completed")
	runScenarios(t, []scenario{
		{
			name:  "sidecar not started yet",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done, running("proxy", 0, 6)}, Probes: fakeProbes{notStarted: map[string]bool{"proxy": true}}},
			phase: corev1.PodPending,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized:  "False/ContainersNotInitialized/containers with incomplete status: [proxy]",
				corev1.ContainersReady: "False/ContainersNotReady/containers with unready status: [proxy app]",
			},
		},
		{
			name:  "sidecar started, app running",
			in:    Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done, running("proxy", 0, 6), running("app", 0, 8)}, Probes: fakeProbes{}},
			phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized:  "True//",
				corev1.ContainersReady: "True//",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				p := find(s.InitContainerStatuses, "proxy")
				assert.True(t, p.Ready)
				assert.Equal(t, ptrBool(true), p.Started)
			},
		},
		{
			name: "sidecar restarting after the app ran keeps the pod initialized",
			in: Input{Pod: pod(), Sandbox: sb, Containers: []*sandbox.ContainerStatus{done, exited("proxy", 0, 6, 1, "Error"), running("app", 0, 8)},
				Waiting: map[string]Waiting{"proxy": {Reason: ReasonCrashLoopBackOff}}, Probes: fakeProbes{}},
			phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodInitialized:  "True//",
				corev1.ContainersReady: "False/ContainersNotReady/containers with unready status: [proxy]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.Equal(t, "CrashLoopBackOff", find(s.InitContainerStatuses, "proxy").State.Waiting.Reason)
			},
		},
	})
}
