package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// cluster is an in-process podkit API server with a client.
type cluster struct {
	client kubernetes.Interface
	config *rest.Config
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	st := memory.New()
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = st.Close()
	})
	rc := &rest.Config{Host: hs.URL, QPS: -1}
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return &cluster{client: client, config: rc}
}

// startScheduler runs a scheduler until the test ends.
func (c *cluster) startScheduler(t testing.TB, profiles []scheduler.Profile, opts ...scheduler.Option) *scheduler.Scheduler {
	t.Helper()
	if profiles == nil {
		profiles = []scheduler.Profile{plugins.DefaultProfile("")}
	}
	opts = append([]scheduler.Option{
		scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		scheduler.WithRandSeed(1),
	}, opts...)
	s, err := scheduler.New(scheduler.Config{Client: c.client, Profiles: profiles}, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return s
}

type nodeOpt func(*corev1.Node)

func withLabels(kv ...string) nodeOpt {
	return func(n *corev1.Node) {
		for i := 0; i+1 < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTaint(key, value string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func makeNode(name, cpu, mem string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	n.Status.Capacity = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	for _, o := range opts {
		o(n)
	}
	return n
}

// createNode creates a node with its status. Kubernetes keeps a node's
// status on create (the kubelet registers that way); podkit's API server
// currently drops it, so the status is written again through nodes/status.
func (c *cluster) createNode(t testing.TB, n *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	created, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	require.NoError(t, err)
	if !equality.Semantic.DeepEqual(created.Status, n.Status) {
		created.Status = n.Status
		_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
}

type podOpt func(*corev1.Pod)

func requests(cpu, mem string) podOpt {
	return func(p *corev1.Pod) {
		rl := corev1.ResourceList{}
		if cpu != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		p.Spec.Containers[0].Resources.Requests = rl
	}
}

func podLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func makePod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func (c *cluster) createPod(t testing.TB, p *corev1.Pod) {
	t.Helper()
	_, err := c.client.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitFor polls cond every 10ms until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return cond() })
	require.NoError(t, err, "waiting for %s", what)
}

// waitBound waits until the pod is bound and returns its node.
func (c *cluster) waitBound(t testing.TB, ns, name string) string {
	t.Helper()
	var node string
	waitFor(t, fmt.Sprintf("pod %s/%s bound", ns, name), func() (bool, error) {
		p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	})
	return node
}

// podCondition returns the pod's PodScheduled condition, if any.
func (c *cluster) podCondition(t testing.TB, ns, name string) *corev1.PodCondition {
	t.Helper()
	p, err := c.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// events returns the events of a pod with the given reason.
func (c *cluster) events(t testing.TB, ns, name, reason string) []corev1.Event {
	t.Helper()
	list, err := c.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
