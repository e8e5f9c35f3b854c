package validation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func storedPod() *corev1.Pod {
	p := validPod()
	p.ObjectMeta = storedMeta(p.ObjectMeta)
	return p
}

func TestPodUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    func(p *corev1.Pod)
		mutate func(p *corev1.Pod)
		want   []want
	}{
		{"no change", nil, func(p *corev1.Pod) {}, nil},
		{"labels may change", nil, func(p *corev1.Pod) { p.Labels["tier"] = "front" }, nil},
		{"image may change", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.local/app:2.0" }, nil},
		{"init image may change", func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{validContainer("init")} },
			func(p *corev1.Pod) { p.Spec.InitContainers[0].Image = "busybox" }, nil},
		{"image may not be emptied", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" }, []want{req("spec.containers[0].image")}},
		{"container env may not change", nil, func(p *corev1.Pod) { p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}} },
			[]want{forb("spec", podUpdateForbiddenMsg)}},
		{"containers may not be added", nil, func(p *corev1.Pod) { p.Spec.Containers = append(p.Spec.Containers, validContainer("two")) },
			[]want{forb("spec.containers", "may not add or remove containers")}},
		{"nodeName may not be set by update", nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, []want{forb("spec", "pod updates may not change fields other than")}},
		{"nodeName may not change", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
			[]want{forb("spec", "pod updates may not change fields other than")}},
		{"activeDeadlineSeconds set", nil, func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(30)) }, nil},
		{"activeDeadlineSeconds shortened", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(30)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(10)) }, nil},
		{"activeDeadlineSeconds extended", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(30)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(60)) }, []want{inv("spec.activeDeadlineSeconds", "less than or equal to previous value")}},
		{"activeDeadlineSeconds removed", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr(int64(30)) },
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, []want{inv("spec.activeDeadlineSeconds", "must not update from a positive integer to nil value")}},
		{"toleration added", nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, nil},
		{"toleration seconds changed", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(60))}}
		}, func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr(int64(10)) }, nil},
		{"toleration removed", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}, func(p *corev1.Pod) { p.Spec.Tolerations = nil }, []want{forb("spec.tolerations", "existing toleration can not be modified")}},
		{"grace period from negative to 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) },
			func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(1)) }, nil},
		{"grace period changed", nil, func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(5)) },
			[]want{forb("spec", "pod updates may not change fields other than")}},
		{"scheduling gate removed", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, nil},
		{"scheduling gate added", nil, func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			[]want{forb("spec.schedulingGates[0].name", "only deletion is allowed")}},
		{"gated pod gains nodeSelector", func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}} },
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }, nil},
		{"ungated pod gains nodeSelector", nil, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
			[]want{forb("spec", "pod updates may not change")}},
		{"name immutable", nil, func(p *corev1.Pod) { p.Name = "other" }, []want{inv("metadata.name", "field is immutable")}},
		{"namespace immutable", nil, func(p *corev1.Pod) { p.Namespace = "kube-system" }, []want{inv("metadata.namespace", "field is immutable")}},
		{"uid immutable", nil, func(p *corev1.Pod) { p.UID = "another" }, []want{inv("metadata.uid", "field is immutable")}},
		{"creationTimestamp immutable", nil, func(p *corev1.Pod) { p.CreationTimestamp = metav1.Now() }, []want{inv("metadata.creationTimestamp", "field is immutable")}},
		{"resourceVersion required", nil, func(p *corev1.Pod) { p.ResourceVersion = "" }, []want{inv("metadata.resourceVersion", "must be specified for an update")}},
		{"mirror annotation may not be added", nil, func(p *corev1.Pod) {
			p.Spec.NodeName = ""
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
		}, []want{forb("metadata.annotations[kubernetes.io/config.mirror]", "may not add"), inv("metadata.annotations[kubernetes.io/config.mirror]", "spec.nodeName")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storedPod()
			if tc.old != nil {
				tc.old(old)
			}
			p := old.DeepCopy()
			tc.mutate(p)
			expectErrors(t, v.ValidateUpdate(p, old), tc.want...)
		})
	}
}

func TestPodUpdateForbiddenMessageCarriesDiff(t *testing.T) {
	old := storedPod()
	p := old.DeepCopy()
	p.Spec.NodeName = "node-9"
	errs := Default().ValidateUpdate(p, old)
	require.Len(t, errs, 1)
	require.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
	first, diff, ok := strings.Cut(errs[0].Detail, "\n")
	require.True(t, ok)
	require.Equal(t, "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)", first)
	require.Contains(t, diff, `spec.nodeName: null -> "node-9"`)
}

func TestPodStatusUpdate(t *testing.T) {
	running := func(p *corev1.Pod) {
		p.Spec.NodeName = "node-1"
		p.Status.Phase = corev1.PodRunning
	}
	cases := []struct {
		name   string
		old    func(p *corev1.Pod)
		mutate func(p *corev1.Pod)
		want   []want
	}{
		{"running with conditions and statuses", running, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/ready", Status: corev1.ConditionFalse}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true}}
			p.Status.PodIP, p.Status.PodIPs = "10.1.0.5", []corev1.PodIP{{IP: "10.1.0.5"}, {IP: "fd00::5"}}
			p.Status.HostIP, p.Status.HostIPs = "192.168.1.10", []corev1.HostIP{{IP: "192.168.1.10"}}
		}, nil},
		{"unknown phase", running, func(p *corev1.Pod) { p.Status.Phase = "Sleeping" }, []want{notSup("status.phase")}},
		{"terminal phase cannot go back", func(p *corev1.Pod) { running(p); p.Status.Phase = corev1.PodSucceeded },
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, []want{forb("status.phase", "terminal phase Succeeded")}},
		{"failed stays failed", func(p *corev1.Pod) { running(p); p.Status.Phase = corev1.PodFailed },
			func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, nil},
		{"condition status", running, func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: "Maybe"}, {Status: corev1.ConditionTrue}, {Type: "not a name", Status: corev1.ConditionTrue}}
		}, []want{notSup("status.conditions[0].status"), req("status.conditions[1].type"), inv("status.conditions[2].type", "")}},
		{"status for unknown container", running, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "ghost"}}
		}, []want{notFound("status.containerStatuses[0].name")}},
		{"duplicate container status", running, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app"}, {Name: "app"}}
		}, []want{dup("status.containerStatuses[1].name")}},
		{"nodeName may not change through status", running, func(p *corev1.Pod) { p.Spec.NodeName = "node-2" }, []want{forb("status.nodeName", "may not be changed directly")}},
		{"qosClass immutable", func(p *corev1.Pod) { running(p); p.Status.QOSClass = corev1.PodQOSBestEffort },
			func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed }, []want{inv("status.qosClass", "field is immutable")}},
		{"terminated container may not restart with Never", func(p *corev1.Pod) {
			running(p)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
		}, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		}, []want{forb("status.containerStatuses[0].state", "may not be transitioned to non-terminated state")}},
		{"bad pod IPs", running, func(p *corev1.Pod) {
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}
		}, []want{inv("status.podIPs", "no more than one IP for each IP family")}},
		{"hostIP mismatch", running, func(p *corev1.Pod) {
			p.Status.HostIP, p.Status.HostIPs = "10.0.0.1", []corev1.HostIP{{IP: "10.0.0.2"}}
		}, []want{inv("status.hostIPs[0].ip", "must be equal to `hostIP`")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storedPod()
			if tc.old != nil {
				tc.old(old)
			}
			p := old.DeepCopy()
			tc.mutate(p)
			expectErrors(t, v.ValidateStatusUpdate(p, old), tc.want...)
		})
	}
}

func TestBinding(t *testing.T) {
	v := Default()
	expectErrors(t, v.ValidateCreate(&corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}))
	expectErrors(t, v.ValidateCreate(&corev1.Binding{Target: corev1.ObjectReference{Kind: "Pod"}}),
		notSup("target.kind"), req("target.name"))
}
