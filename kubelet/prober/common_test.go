package prober

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/sandbox"
)

// reply is one scripted answer of fakeExec.
type reply struct {
	code   int32
	stdout string
	stderr string
	err    error
}

// call is one ExecSync call fakeExec saw.
type call struct {
	id      string
	cmd     []string
	timeout time.Duration
	at      time.Time
}

// fakeExec answers ExecSync from a script (the last reply repeats) and
// records the calls with the clock's time.
type fakeExec struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	script []reply
	calls  []call
}

func (f *fakeExec) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) (*sandbox.ExecResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := call{id: id, cmd: cmd, timeout: timeout}
	if f.clock != nil {
		c.at = f.clock.Now()
	}
	f.calls = append(f.calls, c)
	r := reply{}
	if len(f.script) > 0 {
		r = f.script[0]
		if len(f.script) > 1 {
			f.script = f.script[1:]
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return &sandbox.ExecResult{Stdout: []byte(r.stdout), Stderr: []byte(r.stderr), ExitCode: r.code}, nil
}

// set replaces the script.
func (f *fakeExec) set(rs ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = rs
}

func (f *fakeExec) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeExec) lastCall() call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[len(f.calls)-1]
}

var _ Execer = (*fakeExec)(nil)

func execProbe(cmd ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
}

func httpProbe(path string, port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port}}}
}

func tcpProbe(port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}
}

func testPod(uid string, containers ...corev1.Container) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", types.UID(uid)
	p.Spec.Containers = containers
	return p
}

// newTestManager returns a manager without jitter whose handlers are real.
func newTestManager(t *testing.T, exec Execer, opts ...Option) *Manager {
	t.Helper()
	m, err := NewManager(Config{Exec: exec}, append([]Option{WithRand(func() float64 { return 0 })}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// runOnce runs spec once as kind against a container at podIP, the way a
// worker does, and returns the outcome.
func runOnce(t *testing.T, m *Manager, kind Kind, spec *corev1.Probe, c *corev1.Container, podIP string) outcome {
	t.Helper()
	if c == nil {
		c = &corev1.Container{Name: "app"}
	}
	return m.probe(t.Context(), kind, defaulted(spec), target{container: c, containerID: "c1", podIP: podIP})
}

// closedPort returns a 127.0.0.1 port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, n
}

// defaultTimeout is a probe's default timeoutSeconds.
const defaultTimeout = DefaultTimeoutSeconds * time.Second

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
