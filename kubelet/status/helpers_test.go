package status

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// newPod returns web/default with app containers of the given names
// (default "app"), image nginx:1.27, restartPolicy Always.
func newPod(names ...string) *corev1.Pod {
	if len(names) == 0 {
		names = []string{"app"}
	}
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "nginx:1.27"})
	}
	return p
}

func withInit(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox:1.36"})
	}
	return p
}

func withSidecar(p *corev1.Pod, name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "envoy:1", RestartPolicy: &always})
	return p
}

func withPolicy(p *corev1.Pod, policy corev1.RestartPolicy) *corev1.Pod {
	p.Spec.RestartPolicy = policy
	return p
}

func running(name string, attempt uint32, created int) *sandbox.ContainerStatus {
	return &sandbox.ContainerStatus{
		ID: name + "-" + string(rune('0'+attempt)), SandboxID: "sb1", Name: name, Attempt: attempt,
		State: sandbox.ContainerStateRunning, CreatedAt: at(created), StartedAt: at(created + 1),
		Image: "docker.io/library/nginx:1.27", ImageID: "docker.io/library/nginx@sha256:abc",
	}
}

func exited(name string, attempt uint32, created int, code int32, reason string) *sandbox.ContainerStatus {
	c := running(name, attempt, created)
	c.State, c.FinishedAt, c.ExitCode, c.Reason = sandbox.ContainerStateExited, at(created+5), code, reason
	return c
}

func readySandbox(ips ...string) *sandbox.Sandbox {
	sb := &sandbox.Sandbox{ID: "sb1", State: sandbox.SandboxReady, CreatedAt: t0}
	for _, ip := range ips {
		sb.IPs = append(sb.IPs, netip.MustParseAddr(ip))
	}
	return sb
}

func nodeIPs(ips ...string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

// fakeProbes: every container is started and ready unless listed.
type fakeProbes struct {
	notStarted, notReady map[string]bool
}

func (f fakeProbes) Started(_ types.UID, name string) bool { return !f.notStarted[name] }
func (f fakeProbes) Ready(_ types.UID, name string) bool {
	return !f.notStarted[name] && !f.notReady[name]
}

var _ Probes = fakeProbes{}

func find(list []corev1.ContainerStatus, name string) corev1.ContainerStatus {
	for _, c := range list {
		if c.Name == name {
			return c
		}
	}
	return corev1.ContainerStatus{}
}

func cond(s corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func ptrBool(b bool) *bool { return &b }
