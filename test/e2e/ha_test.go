package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

// Leader-election timings of the HA test: short, so failover is quick.
const (
	haLease = 4 * time.Second
	haRenew = 2 * time.Second
	haRetry = 500 * time.Millisecond
)

// component is a control-plane process other than the API server.
type component struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string
}

func startComponent(t *testing.T, name string, args ...string) *component {
	t.Helper()
	c := &component{name: name, exited: make(chan struct{}), log: filepath.Join(t.TempDir(), name+".log")}
	logf, err := os.Create(c.log)
	require.NoError(t, err)
	defer logf.Close()
	c.cmd = exec.Command(podkitBinary, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, c.cmd.Start(), "starting %s", name)
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			b, _ := os.ReadFile(c.log)
			t.Logf("%s log:\n%s", name, tail(string(b), 40))
		}
	})
	return c
}

func (c *component) kill() {
	_ = c.cmd.Process.Kill()
	<-c.exited
}

func tail(s string, n int) string {
	lines := 0
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			if lines++; lines > n {
				return s[i+1:]
			}
		}
	}
	return s
}

func electionFlags() []string {
	return []string{"--leader-elect-lease-duration", haLease.String(),
		"--leader-elect-renew-deadline", haRenew.String(), "--leader-elect-retry-period", haRetry.String()}
}

// holder returns the lease's holder ("" when free or missing).
func holder(ctx context.Context, c kubernetes.Interface, name string) (*coordinationv1.Lease, string) {
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return nil, ""
	}
	return l, *l.Spec.HolderIdentity
}

// failover kills the process holding lease name (first) while second
// stands by, and checks that second's instance took over within the lease
// duration after first's last renewal.
func failover(t *testing.T, ctx context.Context, c kubernetes.Interface, name string, first *component, startSecond func() *component) {
	t.Helper()
	var leader string
	require.Eventually(t, func() bool { _, leader = holder(ctx, c, name); return leader != "" }, 60*time.Second, 50*time.Millisecond, "%s never took the lease", name)
	startSecond()
	// The standby must not take over a live leader.
	time.Sleep(2 * haLease)
	before, id := holder(ctx, c, name)
	require.Equal(t, leader, id, "the lease moved while its holder was alive")
	first.kill()
	var after *coordinationv1.Lease
	require.Eventually(t, func() bool {
		after, id = holder(ctx, c, name)
		return id != "" && id != leader
	}, 60*time.Second, 50*time.Millisecond, "nobody took over %s", name)
	// Timestamps written by the candidates: the dead leader's last renewal
	// and the new leader's acquisition.
	gap := after.Spec.AcquireTime.Sub(before.Spec.RenewTime.Time)
	t.Logf("%s: leader %s died; %s took over %s after its last renewal (lease %s)", name, leader, id, gap, haLease)
	assert.LessOrEqual(t, gap, haLease+3*haRetry+time.Second, "takeover within the lease duration (plus a retry period)")
}

func haNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
	}}
}

// TestHAControlPlaneOnEtcd runs two API servers on one etcd, with a
// scheduler and a controller-manager on each, and kills the leading
// scheduler and controller-manager: the standbys take over, every pod is
// created once and bound once.
func TestHAControlPlaneOnEtcd(t *testing.T) {
	etcd := etcdtest.Start(t)
	store := "etcd://" + etcd.Members[0].ClientURL[len("http://"):]
	shared := filepath.Join(t.TempDir(), "data")
	a := startAPIServer(t, withDataDir(shared), withStore(store))
	b := startAPIServer(t, withDataDir(shared), withStore(store))
	ctx := testContext(t, 5*time.Minute)
	ca, cb := a.Client(), b.Client()

	// Writes through a are seen by watches on b.
	w, err := cb.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	cm, err := ca.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ha"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for seen := false; !seen; {
		select {
		case ev := <-w.ResultChan():
			// A watch without resourceVersion starts with the existing
			// objects (kube-root-ca.crt) as ADDED.
			if got, ok := ev.Object.(*corev1.ConfigMap); ok && got.Name == "ha" {
				require.Equal(t, watch.Added, ev.Type)
				assert.Equal(t, cm.ResourceVersion, got.ResourceVersion)
				seen = true
			}
		case <-ctx.Done():
			t.Fatal("b's watch did not see a's write")
		}
	}
	// Optimistic concurrency holds across the servers.
	cm.Data["v"] = "2"
	_, err = cb.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	cm.Data["v"] = "stale"
	_, err = ca.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale update through a: %v", err)

	for _, n := range []string{"node-a", "node-b"} {
		_, err := ca.CoreV1().Nodes().Create(ctx, haNode(n), metav1.CreateOptions{})
		require.NoError(t, err)
	}
	bindings := watchBindings(t, ctx, cb)

	cmArgs := func(s *apiServer) []string {
		return append([]string{"controller-manager", "--kubeconfig", s.Kubeconfig, "--node-monitor-grace-period", "1h"}, electionFlags()...)
	}
	schedArgs := func(s *apiServer) []string {
		return append([]string{"scheduler", "--kubeconfig", s.Kubeconfig}, electionFlags()...)
	}
	cm1 := startComponent(t, "controller-manager-1", cmArgs(a)...)
	sched1 := startComponent(t, "scheduler-1", schedArgs(a)...)

	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "img:1"}}},
			},
		},
	}
	_, err = ca.AppsV1().Deployments("default").Create(ctx, deploy, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPods(t, ctx, cb, 3)

	failover(t, ctx, cb, "kube-controller-manager", cm1, func() *component { return startComponent(t, "controller-manager-2", cmArgs(b)...) })
	failover(t, ctx, cb, "kube-scheduler", sched1, func() *component { return startComponent(t, "scheduler-2", schedArgs(b)...) })

	// The new leaders carry on: scale up through b.
	scale, err := cb.AppsV1().Deployments("default").GetScale(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	scale.Spec.Replicas = 8
	_, err = cb.AppsV1().Deployments("default").UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	waitPods(t, ctx, cb, 8)

	rss, err := cb.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, rss.Items, 1, "one ReplicaSet for one template")
	pods, err := cb.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, pods.Items, 8, "no pod created twice, none lost")
	bound := bindings.snapshot()
	for _, p := range pods.Items {
		assert.Equal(t, []string{p.Spec.NodeName}, bound[p.Name], "pod %s bound exactly once", p.Name)
	}
}

// waitPods waits until exactly n pods exist in default, all bound.
func waitPods(t *testing.T, ctx context.Context, c kubernetes.Interface, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != n {
			return false
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	}, 120*time.Second, 100*time.Millisecond, "want %d bound pods", n)
}

// bindingLog records, from a watch, every node each pod was bound to.
type bindingLog struct {
	mu    sync.Mutex
	nodes map[string][]string
}

func (l *bindingLog) snapshot() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for k, v := range l.nodes {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func watchBindings(t *testing.T, ctx context.Context, c kubernetes.Interface) *bindingLog {
	t.Helper()
	l := &bindingLog{nodes: map[string][]string{}}
	w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	go func() {
		last := map[string]string{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || p.Spec.NodeName == last[p.Name] {
				continue
			}
			last[p.Name] = p.Spec.NodeName
			l.mu.Lock()
			l.nodes[p.Name] = append(l.nodes[p.Name], p.Spec.NodeName)
			l.mu.Unlock()
		}
	}()
	return l
}

func ptrTo[T any](v T) *T { return &v }
