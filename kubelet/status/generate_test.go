package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/sandbox"
)

func TestGenerateSeedPodRunningAndReady(t *testing.T) {
	got := Generate(Input{
		Pod:        newPod(),
		Sandbox:    readySandbox("10.1.0.5"),
		Containers: []*sandbox.ContainerStatus{running("app", 0, 0)},
		NodeIPs:    nodeIPs("192.168.1.10"),
	})
	want := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		},
		HostIP:   "192.168.1.10",
		HostIPs:  []corev1.HostIP{{IP: "192.168.1.10"}},
		PodIP:    "10.1.0.5",
		PodIPs:   []corev1.PodIP{{IP: "10.1.0.5"}},
		QOSClass: corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:        "app",
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}},
			Ready:       true,
			Image:       "docker.io/library/nginx:1.27",
			ImageID:     "docker.io/library/nginx@sha256:abc",
			ContainerID: "podkit://app-0",
			Started:     ptrBool(true),
		}},
	}
	assert.Equal(t, want, got)
}

func TestGenerateContainerCreating(t *testing.T) {
	got := Generate(Input{Pod: newPod(), NodeIPs: nodeIPs("192.168.1.10")})
	want := corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"},
			{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]"},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		},
		HostIP:   "192.168.1.10",
		HostIPs:  []corev1.HostIP{{IP: "192.168.1.10"}},
		QOSClass: corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:    "app",
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			Image:   "nginx:1.27",
			Started: ptrBool(false),
		}},
	}
	assert.Equal(t, want, got)
}

// scenario is one table case of Generate: the input and the pod-level
// facts expected.
type scenario struct {
	name    string
	in      Input
	phase   corev1.PodPhase
	reason  string
	message string
	conds   map[corev1.PodConditionType]string // "Status/Reason/Message"
	check   func(t *testing.T, s corev1.PodStatus)
}

func condString(c corev1.PodCondition) string {
	return string(c.Status) + "/" + c.Reason + "/" + c.Message
}

func runScenarios(t *testing.T, tests []scenario) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Generate(tt.in)
			assert.Equal(t, tt.phase, s.Phase)
			assert.Equal(t, tt.reason, s.Reason)
			assert.Equal(t, tt.message, s.Message)
			for typ, want := range tt.conds {
				assert.Equal(t, want, condString(cond(s, typ)), "condition %s", typ)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestGenerateProbes(t *testing.T) {
	pod := newPod("app", "db")
	sb := readySandbox("10.1.0.5")
	cs := []*sandbox.ContainerStatus{running("app", 0, 0), running("db", 0, 0)}
	runScenarios(t, []scenario{
		{
			name:  "readiness failing",
			in:    Input{Pod: pod, Sandbox: sb, Containers: cs, Probes: fakeProbes{notReady: map[string]bool{"db": true}}},
			phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodReady:        "False/ContainersNotReady/containers with unready status: [db]",
				corev1.ContainersReady: "False/ContainersNotReady/containers with unready status: [db]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.True(t, find(s.ContainerStatuses, "app").Ready)
				assert.False(t, find(s.ContainerStatuses, "db").Ready)
				assert.Equal(t, ptrBool(true), find(s.ContainerStatuses, "db").Started)
				assert.Equal(t, []string{"app", "db"}, []string{s.ContainerStatuses[0].Name, s.ContainerStatuses[1].Name})
			},
		},
		{
			name:  "startup pending",
			in:    Input{Pod: pod, Sandbox: sb, Containers: cs, Probes: fakeProbes{notStarted: map[string]bool{"app": true, "db": true}}},
			phase: corev1.PodRunning,
			conds: map[corev1.PodConditionType]string{
				corev1.PodReady: "False/ContainersNotReady/containers with unready status: [app db]",
			},
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.Equal(t, ptrBool(false), find(s.ContainerStatuses, "app").Started)
			},
		},
		{
			name:  "probes say ready but the runtime says exited",
			in:    Input{Pod: withPolicy(newPod(), corev1.RestartPolicyOnFailure), Sandbox: sb, Containers: []*sandbox.ContainerStatus{exited("app", 0, 0, 1, "Error")}, Probes: fakeProbes{}},
			phase: corev1.PodRunning,
			check: func(t *testing.T, s corev1.PodStatus) {
				assert.False(t, s.ContainerStatuses[0].Ready)
				assert.Equal(t, ptrBool(false), s.ContainerStatuses[0].Started)
			},
		},
	})
}

func TestGenerateIPs(t *testing.T) {
	hostNet := newPod()
	hostNet.Spec.HostNetwork = true
	old := &corev1.PodStatus{PodIP: "10.1.0.9", PodIPs: []corev1.PodIP{{IP: "10.1.0.9"}}}
	stopped := readySandbox("10.1.0.5")
	stopped.State = sandbox.SandboxNotReady
	tests := []struct {
		name         string
		in           Input
		podIPs       []string
		hostIPs      []string
		readyToStart corev1.ConditionStatus
	}{
		{"v4 node prefers v4", Input{Pod: newPod(), Sandbox: readySandbox("fd00::5", "10.1.0.5", "10.1.0.6"), NodeIPs: nodeIPs("192.168.1.10")},
			[]string{"10.1.0.5", "fd00::5"}, []string{"192.168.1.10"}, corev1.ConditionTrue},
		{"v6 node prefers v6", Input{Pod: newPod(), Sandbox: readySandbox("10.1.0.5", "fd00::5"), NodeIPs: nodeIPs("fd00:1::10", "192.168.1.10", "10.0.0.1")},
			[]string{"fd00::5", "10.1.0.5"}, []string{"fd00:1::10", "192.168.1.10"}, corev1.ConditionTrue},
		{"host network gets node IPs", Input{Pod: hostNet, Sandbox: readySandbox(), NodeIPs: nodeIPs("192.168.1.10")},
			[]string{"192.168.1.10"}, []string{"192.168.1.10"}, corev1.ConditionTrue},
		{"ready sandbox without IP", Input{Pod: newPod(), Sandbox: readySandbox(), NodeIPs: nodeIPs("192.168.1.10")},
			nil, []string{"192.168.1.10"}, corev1.ConditionFalse},
		{"stopped sandbox keeps the old IP", Input{Pod: newPod(), Sandbox: stopped, Old: old},
			[]string{"10.1.0.9"}, nil, corev1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Generate(tt.in)
			var ips, hips []string
			for _, ip := range s.PodIPs {
				ips = append(ips, ip.IP)
			}
			for _, ip := range s.HostIPs {
				hips = append(hips, ip.IP)
			}
			assert.Equal(t, tt.podIPs, ips)
			assert.Equal(t, tt.hostIPs, hips)
			if len(tt.podIPs) > 0 {
				assert.Equal(t, tt.podIPs[0], s.PodIP)
			} else {
				assert.Empty(t, s.PodIP)
			}
			if len(tt.hostIPs) > 0 {
				assert.Equal(t, tt.hostIPs[0], s.HostIP)
			}
			assert.Equal(t, tt.readyToStart, cond(s, corev1.PodReadyToStartContainers).Status)
		})
	}
}

func TestGenerateQOSAndPreserved(t *testing.T) {
	g := newPod()
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	g.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	assert.Equal(t, corev1.PodQOSGuaranteed, Generate(Input{Pod: g}).QOSClass)
	g.Status.QOSClass = corev1.PodQOSBurstable
	assert.Equal(t, corev1.PodQOSBurstable, Generate(Input{Pod: g}).QOSClass, "the recorded class is immutable")

	start := metav1.NewTime(at(0))
	p := newPod()
	p.Generation = 3
	p.Status.StartTime = &start
	p.Status.Conditions = []corev1.PodCondition{
		{Type: "example.com/gate", Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}
	old := &corev1.PodStatus{StartTime: &start, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}}
	s := Generate(Input{Pod: p, Old: old})
	assert.Equal(t, &start, s.StartTime)
	assert.Equal(t, int64(3), s.ObservedGeneration)
	var types []corev1.PodConditionType
	for _, c := range s.Conditions {
		types = append(types, c.Type)
		if ownedByKubelet[c.Type] {
			assert.Equal(t, int64(3), c.ObservedGeneration, c.Type)
		}
	}
	assert.Equal(t, []corev1.PodConditionType{"example.com/gate", corev1.DisruptionTarget, corev1.PodReadyToStartContainers,
		corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}, types)
}

func TestGeneratePhaseReason(t *testing.T) {
	done := newPod()
	done.Status.Phase, done.Status.Reason = corev1.PodSucceeded, "Done"
	evicted := newPod()
	evicted.Status.Phase = corev1.PodRunning
	sb := readySandbox("10.1.0.5")
	live := []*sandbox.ContainerStatus{running("app", 0, 0)}
	runScenarios(t, []scenario{
		{
			name:  "admission rejection",
			in:    Input{Pod: newPod(), Override: &Override{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"}},
			phase: corev1.PodFailed, reason: "OutOfcpu", message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000",
			conds: map[corev1.PodConditionType]string{
				corev1.PodReady:        "False/PodFailed/",
				corev1.ContainersReady: "False/PodFailed/",
			},
		},
		{
			name:  "deadline exceeded while running",
			in:    Input{Pod: newPod(), Sandbox: sb, Containers: live, Override: &Override{Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}},
			phase: corev1.PodFailed, reason: "DeadlineExceeded", message: "Pod was active on the node longer than the specified deadline",
		},
		{
			name:  "soft rejection stays pending with its reason",
			in:    Input{Pod: newPod(), Override: &Override{Phase: corev1.PodPending, Reason: "AppArmor", Message: "Cannot enforce AppArmor: profile \"x\" is not loaded"}},
			phase: corev1.PodPending, reason: "AppArmor", message: "Cannot enforce AppArmor: profile \"x\" is not loaded",
		},
		{
			name:  "terminal API phase is final",
			in:    Input{Pod: done, Sandbox: sb, Containers: live},
			phase: corev1.PodSucceeded, reason: "Done",
		},
		{
			name:  "terminal old phase is final, override ignored",
			in:    Input{Pod: newPod(), Old: &corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low memory"}, Sandbox: sb, Containers: live, Override: &Override{Phase: corev1.PodPending, Reason: "X"}},
			phase: corev1.PodFailed, reason: "Evicted", message: "low memory",
		},
		{
			name:  "reason kept while the phase holds",
			in:    Input{Pod: evicted, Old: &corev1.PodStatus{Phase: corev1.PodRunning, Reason: "R", Message: "M"}, Sandbox: sb, Containers: live},
			phase: corev1.PodRunning, reason: "R", message: "M",
		},
		{
			name:  "reason dropped when the phase changes",
			in:    Input{Pod: newPod(), Old: &corev1.PodStatus{Phase: corev1.PodPending, Reason: "R"}, Sandbox: sb, Containers: live},
			phase: corev1.PodRunning,
		},
	})
}

func TestGenerateReadinessGates(t *testing.T) {
	p := newPod()
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionFalse}}
	in := Input{Pod: p, Sandbox: readySandbox("10.1.0.5"), Containers: []*sandbox.ContainerStatus{running("app", 0, 0)}}
	s := Generate(in)
	assert.Equal(t, `False/ReadinessGatesNotReady/the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.`,
		condString(cond(s, corev1.PodReady)))
	assert.Equal(t, "True//", condString(cond(s, corev1.ContainersReady)))

	p.Status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}, {Type: "example.com/dns", Status: corev1.ConditionTrue}}
	require.Equal(t, "True//", condString(cond(Generate(in), corev1.PodReady)))
}
