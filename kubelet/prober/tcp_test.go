package prober

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port := hostPort(t, l.Addr().String())
	refused := closedPort(t)
	m := newTestManager(t, nil)
	named := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "db", ContainerPort: int32(port)}}}

	tests := []struct {
		name      string
		kind      Kind
		port      intstr.IntOrString
		host      string
		podIP     string
		container *corev1.Container
		result    Result
		message   string
		errored   bool
	}{
		{name: "open", kind: Liveness, port: intstr.FromInt(port), podIP: "127.0.0.1", result: Success},
		{name: "named port", kind: Readiness, port: intstr.FromString("db"), podIP: "127.0.0.1", container: named, result: Success},
		{name: "explicit host", kind: Readiness, port: intstr.FromInt(port), host: "127.0.0.1", podIP: "192.0.2.1", result: Success},
		{name: "refused", kind: Readiness, port: intstr.FromInt(refused), podIP: "127.0.0.1", result: Failure,
			message: fmt.Sprintf("Readiness probe failed: dial tcp 127.0.0.1:%d: connect: connection refused", refused)},
		{name: "missing name", kind: Liveness, port: intstr.FromString("db"), podIP: "127.0.0.1", result: Failure, errored: true,
			message: `Liveness probe errored and resulted in unknown state: strconv.Atoi: parsing "db": invalid syntax`},
		{name: "zero port", kind: Liveness, port: intstr.FromInt(0), podIP: "127.0.0.1", result: Failure, errored: true,
			message: "Liveness probe errored and resulted in unknown state: invalid port number: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tcpProbe(tt.port)
			p.TCPSocket.Host = tt.host
			o := runOnce(t, m, tt.kind, p, tt.container, tt.podIP)
			assert.Equal(t, tt.result, o.result)
			assert.Equal(t, tt.errored, o.err != nil)
			assert.Equal(t, tt.message, o.message)
			if tt.result == Failure {
				assert.Equal(t, EventUnhealthy, o.event)
			}
		})
	}
}

func TestNoHandler(t *testing.T) {
	m := newTestManager(t, nil)
	o := runOnce(t, m, Readiness, &corev1.Probe{}, nil, "127.0.0.1")
	require.ErrorIs(t, o.err, ErrNoHandler)
	assert.Equal(t, `Readiness probe errored and resulted in unknown state: container "app": missing probe handler`, o.message)
}
