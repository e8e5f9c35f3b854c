package kubelet_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/kubelet/kubelettest"
	"github.com/podkit/podkit/kubelet/prober"
	"github.com/podkit/podkit/sandbox/fake"
)

// waitTimeout bounds how long a test waits for the kubelet to converge; it
// is a safety net, not an assertion on speed.
const waitTimeout = 30 * time.Second

// testImage is present on every test node; its entrypoint is testbox.
const testImage = "registry.test/testbox:1"

// env is one test's cluster: an in-process API server with the default
// admission chain, a Node, and a kubelet over the in-memory runtime,
// images and snapshots, all driven by a fake clock.
type env struct {
	t        testing.TB
	client   kubernetes.Interface
	clock    *clocktesting.FakeClock
	runtime  *fake.Runner
	images   *kubelettest.Images
	snaps    *kubelettest.Snapshots
	cfg      kubelet.Config
	registry *prometheus.Registry
	kubelet  *kubelet.Kubelet
	cancel   context.CancelFunc
	done     chan error
}

var nodeSeq atomic.Int64

func newAPI(t testing.TB) kubernetes.Interface {
	t.Helper()
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	t.Cleanup(func() { _ = st.Close() })
	rc := inproc.RESTConfig(srv.Handler())
	rc.QPS = -1
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return c
}

// newEnv builds the environment with a node of 4 CPUs and 8Gi; mutate
// adjusts the kubelet's Config before start.
func newEnv(t testing.TB, mutate ...func(*kubelet.Config)) *env {
	t.Helper()
	return newEnvNode(t, nodeSpec{"4", "8Gi", nil}, mutate...)
}

// nodeSpec is the test node's allocatable and taints.
type nodeSpec struct {
	cpu, mem string
	taints   []corev1.Taint
}

func newEnvNode(t testing.TB, n nodeSpec, mutate ...func(*kubelet.Config)) *env {
	t.Helper()
	e := &env{t: t, client: newAPI(t), clock: clocktesting.NewFakeClock(time.Now().Truncate(time.Second))}
	var err error
	e.runtime, err = fake.New(fake.WithClock(e.clock), fake.WithIDSeed(t.Name()))
	require.NoError(t, err)
	e.images = kubelettest.NewImages()
	require.NoError(t, e.images.Add(testImage, v1.Config{Entrypoint: []string{"/bin/testbox"}, Cmd: []string{"sleep", "inf"}}))
	e.snaps = kubelettest.NewSnapshots()
	dir := t.TempDir()
	e.registry = prometheus.NewRegistry()
	e.cfg = kubelet.Config{
		NodeName:      fmt.Sprintf("node-%d", nodeSeq.Add(1)),
		Client:        e.client,
		Runtime:       e.runtime,
		Images:        e.images,
		Snapshots:     e.snaps,
		RootDir:       filepath.Join(dir, "root"),
		LogDir:        filepath.Join(dir, "logs"),
		NodeHostname:  "testhost",
		DNS:           cni.NodeDNS{ClusterDNS: []netip.Addr{netip.MustParseAddr("10.96.0.10")}, ClusterDomain: "cluster.local"},
		AppArmorRoot:  filepath.Join(dir, "sys"),
		Clock:         e.clock,
		Registerer:    e.registry,
		RetryInterval: time.Second,
		ProberOptions: []prober.Option{prober.WithRand(func() float64 { return 0 })},
		Logger:        testLogger(t),
	}
	for _, m := range mutate {
		m(&e.cfg)
	}
	e.createNode(n.cpu, n.mem, n.taints...)
	return e
}

// testLogger logs to the test when KUBELET_TEST_LOG is set.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("KUBELET_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// createNode registers the test node with cpu and memory allocatable.
func (e *env) createNode(cpu, mem string, taints ...corev1.Taint) {
	e.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.cfg.NodeName, Labels: map[string]string{
		corev1.LabelHostname: e.cfg.NodeName, corev1.LabelOSStable: "linux"}}}
	n.Spec.Taints = taints
	created, err := e.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	require.NoError(e.t, err)
	created.Status.Capacity = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	created.Status.Allocatable = created.Status.Capacity.DeepCopy()
	created.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}}
	_, err = e.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

// start runs the kubelet until the test ends (or stop).
func (e *env) start() {
	e.t.Helper()
	k, err := kubelet.New(e.cfg)
	require.NoError(e.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	e.kubelet, e.cancel, e.done = k, cancel, make(chan error, 1)
	go func() { e.done <- k.Run(ctx) }()
	e.t.Cleanup(e.stop)
}

// stop stops the kubelet and waits for Run to return.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	select {
	case err := <-e.done:
		require.NoError(e.t, err)
	case <-time.After(waitTimeout):
		e.t.Error("kubelet did not stop")
	}
	e.cancel = nil
}

// pod builds a pod bound to the test node with one container per command.
func (e *env) pod(name string, cmds ...[]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: e.cfg.NodeName}}
	for i, cmd := range cmds {
		cname := "app"
		if i > 0 {
			cname = fmt.Sprintf("app%d", i)
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: cname, Image: testImage, Args: cmd})
	}
	return p
}

func (e *env) create(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	out, err := e.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(e.t, err)
	return out
}

func (e *env) get(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(e.t, err)
	return p
}

// waitPod waits until cond holds for the pod (nil pod: deleted) and
// returns it.
func (e *env) waitPod(name string, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var last *corev1.Pod
	for ctx.Err() == nil {
		list, err := e.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			break
		}
		last = nil
		if len(list.Items) > 0 {
			last = &list.Items[0]
		}
		if cond(last) {
			return last
		}
		w, err := e.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: list.ResourceVersion})
		if err != nil {
			break
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				last = nil
			case watch.Added, watch.Modified:
				last = ev.Object.(*corev1.Pod)
			default:
				continue
			}
			if cond(last) {
				w.Stop()
				return last
			}
		}
		w.Stop()
	}
	if os.Getenv("KUBELET_TEST_STACKS") != "" {
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
	}
	e.t.Fatalf("pod %s never got %s; last seen:\n%s", name, what, dump(last))
	return nil
}

// dump renders a pod's status for failure messages.
func dump(p *corev1.Pod) string {
	if p == nil {
		return "<deleted>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%q message=%q deleting=%v\n", p.Status.Phase, p.Status.Reason, p.Status.Message, p.DeletionTimestamp != nil)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s %q\n", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			fmt.Fprintf(&b, "  container %s restarts=%d ready=%v state=%s last=%s\n", cs.Name, cs.RestartCount, cs.Ready, stateString(cs.State), stateString(cs.LastTerminationState))
		}
	}
	return b.String()
}

func stateString(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%d %s %q)", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s %q)", s.Waiting.Reason, s.Waiting.Message)
	}
	return "none"
}

// containerStatus returns the pod's status of container name.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	if p == nil {
		return nil
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func running(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

func ready(p *corev1.Pod) bool {
	c := condition(p, corev1.PodReady)
	return p != nil && c != nil && c.Status == corev1.ConditionTrue
}

// events returns the pod's events as "Type Reason Message" lines.
func (e *env) events(pod string) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String()})
	require.NoError(e.t, err)
	var out []string
	for _, ev := range list.Items {
		out = append(out, fmt.Sprintf("%s %s %s", ev.Type, ev.Reason, ev.Message))
	}
	return out
}

// waitEvent waits until the pod has an event "Type Reason Message".
func (e *env) waitEvent(pod, want string) {
	e.t.Helper()
	e.waitEventMatch(pod, want, func(ev string) bool { return ev == want })
}

// waitEventPrefix waits until the pod has an event starting with prefix.
func (e *env) waitEventPrefix(pod, prefix string) {
	e.t.Helper()
	e.waitEventMatch(pod, prefix+"...", func(ev string) bool { return strings.HasPrefix(ev, prefix) })
}

func (e *env) waitEventMatch(pod, want string, match func(string) bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, ev := range e.events(pod) {
			if match(ev) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("pod %s never got event %q; events:\n%s", pod, want, strings.Join(e.events(pod), "\n"))
}

// step advances the fake clock.
func (e *env) step(d time.Duration) { e.clock.Step(d) }

func ptr[T any](v T) *T { return &v }
