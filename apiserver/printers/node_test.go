package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestNodeStatusAndRoles(t *testing.T) {
	ready := func(s corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s}
	}
	pressure := corev1.NodeCondition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}

	tests := []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		labels        map[string]string
		status, roles string
	}{
		{"ready", []corev1.NodeCondition{ready(corev1.ConditionTrue)}, false, nil, "Ready", "<none>"},
		{"not ready", []corev1.NodeCondition{ready(corev1.ConditionFalse)}, false, nil, "NotReady", "<none>"},
		{"ready unknown prints not ready", []corev1.NodeCondition{ready(corev1.ConditionUnknown)}, false, nil, "NotReady", "<none>"},
		{"no ready condition", []corev1.NodeCondition{pressure}, false, nil, "Unknown", "<none>"},
		{"no conditions", nil, false, nil, "Unknown", "<none>"},
		{"cordoned", []corev1.NodeCondition{ready(corev1.ConditionTrue)}, true, nil, "Ready,SchedulingDisabled", "<none>"},
		{"cordoned and not ready", []corev1.NodeCondition{ready(corev1.ConditionFalse)}, true, nil, "NotReady,SchedulingDisabled", "<none>"},
		{"cordoned without conditions", nil, true, nil, "Unknown,SchedulingDisabled", "<none>"},
		{"last ready condition wins", []corev1.NodeCondition{ready(corev1.ConditionFalse), ready(corev1.ConditionTrue)}, false, nil, "Ready", "<none>"},
		{"roles from labels, sorted and distinct", []corev1.NodeCondition{ready(corev1.ConditionTrue)}, false, map[string]string{
			"node-role.kubernetes.io/worker":        "",
			"node-role.kubernetes.io/control-plane": "",
			"kubernetes.io/role":                    "worker",
			"node-role.kubernetes.io/":              "",
			"kubernetes.io/hostname":                "n1",
		}, "Ready", "control-plane,worker"},
		{"empty legacy role label", nil, false, map[string]string{"kubernetes.io/role": ""}, "Unknown", "<none>"},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: objMeta("n1", 3*24*time.Hour), Spec: corev1.NodeSpec{Unschedulable: tt.unschedulable}}
			n.Namespace = ""
			n.Labels = tt.labels
			n.Status.Conditions = tt.conditions
			n.Status.NodeInfo.KubeletVersion = "v1.37.2"
			cells := cellsOf(t, p, n)
			assert.Equal(t, []any{"n1", tt.status, tt.roles, "3d", "v1.37.2"}, cells[:5])
		})
	}
}

func TestNodeWideCells(t *testing.T) {
	p := newTestPrinter(t)
	n := &corev1.Node{ObjectMeta: objMeta("n1", time.Hour)}
	assert.Equal(t, []any{"<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}, cellsOf(t, p, n)[5:])

	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n1"},
		{Type: corev1.NodeInternalIP, Address: "192.168.1.10"},
		{Type: corev1.NodeInternalIP, Address: "192.168.1.11"},
		{Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{OSImage: "Debian GNU/Linux 12 (bookworm)", KernelVersion: "6.1.0-18-amd64", ContainerRuntimeVersion: "podkit://0.1.0"}
	assert.Equal(t, []any{"192.168.1.10", "203.0.113.7", "Debian GNU/Linux 12 (bookworm)", "6.1.0-18-amd64", "podkit://0.1.0"}, cellsOf(t, p, n)[5:])
	assert.Equal(t, []string{"Name", "Status", "Roles", "Age", "Version", "+Internal-IP", "+External-IP", "+OS-Image", "+Kernel-Version", "+Container-Runtime"}, columnNames(p.ColumnDefinitions(n)))
}
