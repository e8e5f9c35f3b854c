package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestNodePorts(t *testing.T) {
	const tcp, udp = corev1.ProtocolTCP, corev1.ProtocolUDP
	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		want     string
	}{
		{"no host ports", pod("p").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "").obj()}, ""},
		{"free port", pod("p").hostPort(8080, tcp, "").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "").obj()}, ""},
		{"same port and protocol", pod("p").hostPort(80, tcp, "").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "").obj()}, ErrReasonNodePorts},
		{"empty protocol means TCP", pod("p").hostPort(80, "", "").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "").obj()}, ErrReasonNodePorts},
		{"other protocol", pod("p").hostPort(53, udp, "").obj(), []*corev1.Pod{pod("e").node("n").hostPort(53, tcp, "").obj()}, ""},
		{"different specific IPs", pod("p").hostPort(80, tcp, "10.0.0.1").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "10.0.0.2").obj()}, ""},
		{"same specific IP", pod("p").hostPort(80, tcp, "10.0.0.1").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "10.0.0.1").obj()}, ErrReasonNodePorts},
		{"wildcard wanted, specific used", pod("p").hostPort(80, tcp, "").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "10.0.0.1").obj()}, ErrReasonNodePorts},
		{"specific wanted, wildcard used", pod("p").hostPort(80, tcp, "10.0.0.1").obj(), []*corev1.Pod{pod("e").node("n").hostPort(80, tcp, "0.0.0.0").obj()}, ErrReasonNodePorts},
		{"pod on another node does not count", pod("p").hostPort(80, tcp, "").obj(), []*corev1.Pod{pod("e").node("other").hostPort(80, tcp, "").obj()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runFilter(NewNodePorts(), tt.pod, "n", []*corev1.Node{node("n").obj(), node("other").obj()}, tt.existing)
			assert.Equal(t, tt.want, reasonsOf(err))
		})
	}
}

func TestNodePortsSidecar(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := pod("p").obj()
	p.Spec.InitContainers = []corev1.Container{
		{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 81}}},
		{Name: "sidecar", RestartPolicy: &always, Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}},
	}
	existing := []*corev1.Pod{pod("e").node("n").hostPort(80, corev1.ProtocolTCP, "").obj()}
	assert.Equal(t, ErrReasonNodePorts, reasonsOf(runFilter(NewNodePorts(), p, "n", []*corev1.Node{node("n").obj()}, existing)))
	// Only the sidecar claims its port; a plain init container's is ignored.
	existing = []*corev1.Pod{pod("e").node("n").hostPort(81, corev1.ProtocolTCP, "").obj()}
	assert.Equal(t, "", reasonsOf(runFilter(NewNodePorts(), p, "n", []*corev1.Node{node("n").obj()}, existing)))
}
