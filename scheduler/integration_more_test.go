package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// 1,000 pods on 10 nodes never overcommit any node's allocatable.
func TestIntegrationNoOvercommit(t *testing.T) {
	c := newCluster(t)
	for i := range 10 {
		// 10 nodes × 3.5 cpu fit 70 pods of 500m; 1,000 pods compete.
		c.createNode(t, makeNode(fmt.Sprintf("n%d", i), "3500m", "64Gi"))
	}
	reg := prometheus.NewRegistry()
	c.startScheduler(t, nil, scheduler.WithMetricsRegisterer(reg))

	const pods = 1000
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c.createPod(t, makePod(fmt.Sprintf("p%04d", i), requests("500m", "100Mi")))
			}
		}()
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()

	ctx := context.Background()
	waitFor(t, "70 pods bound", func() (bool, error) {
		list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
		return err == nil && len(list.Items) == 70, err
	})
	// Let the scheduler retry the rest at least once more, then check.
	waitFor(t, "unschedulable attempts", func() (bool, error) {
		return attempts(t, reg, "unschedulable") >= pods-70, nil
	})
	list, err := c.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	perNode := map[string]int64{}
	bound := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			bound++
		}
	}
	assert.Equal(t, 70, bound)
	for n, used := range perNode {
		assert.LessOrEqual(t, used, int64(3500), "node %s overcommitted", n)
	}
	assert.Len(t, perNode, 10)
}

// metricValue sums the samples of a counter or gauge family whose labels
// include the given ones, and reports how many series matched.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			n++
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum, n
}

func attempts(t testing.TB, reg *prometheus.Registry, result string) float64 {
	v, _ := metricValue(t, reg, "scheduler_schedule_attempts_total", "result", result)
	return v
}

func TestIntegrationTopologySpread(t *testing.T) {
	c := newCluster(t)
	for _, z := range []string{"a", "b", "c"} {
		for i := range 2 {
			c.createNode(t, makeNode(fmt.Sprintf("%s%d", z, i), "8", "16Gi", withLabels(corev1.LabelTopologyZone, z)))
		}
	}
	c.startScheduler(t, nil)
	spread := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "api"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
		}}
	}
	zones := map[string]int{}
	for i := range 9 {
		name := fmt.Sprintf("api-%d", i)
		c.createPod(t, makePod(name, spread))
		zones[c.waitBound(t, "default", name)[:1]]++
	}
	assert.Equal(t, map[string]int{"a": 3, "b": 3, "c": 3}, zones)
}

func TestIntegrationProfiles(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("busy", "4", "8Gi"))
	c.createNode(t, makeNode("idle", "4", "8Gi"))
	fit, err := plugins.NewFit(plugins.FitArgs{ScoringStrategy: &plugins.ScoringStrategy{Type: plugins.MostAllocated}})
	require.NoError(t, err)
	packing := scheduler.Profile{SchedulerName: "bin-packer", Plugins: []scheduler.PluginSpec{
		{Plugin: plugins.NewNodeUnschedulable()}, {Plugin: fit, Weight: 1},
	}}
	c.startScheduler(t, []scheduler.Profile{plugins.DefaultProfile(""), packing})

	// A pod for another scheduler is left alone.
	c.createPod(t, makePod("foreign", func(p *corev1.Pod) { p.Spec.SchedulerName = "someone-else" }))

	c.createPod(t, makePod("first", requests("2", "1Gi")))
	first := c.waitBound(t, "default", "first")
	other := map[string]string{"busy": "idle", "idle": "busy"}[first]
	// The default profile spreads (LeastAllocated) ...
	c.createPod(t, makePod("spread", requests("1", "1Gi")))
	assert.Equal(t, other, c.waitBound(t, "default", "spread"))
	// ... the bin-packing profile packs (MostAllocated).
	c.createPod(t, makePod("packed", requests("500m", "1Gi"), func(p *corev1.Pod) { p.Spec.SchedulerName = "bin-packer" }))
	assert.Equal(t, first, c.waitBound(t, "default", "packed"))
	ev := c.events(t, "default", "packed", "Scheduled")
	if len(ev) > 0 {
		assert.Equal(t, "bin-packer", ev[0].Source.Component)
	}

	p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "foreign", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.Spec.NodeName)
	assert.Empty(t, p.Status.Conditions)
}

// flakyBinder fails the first bind of every pod.
type flakyBinder struct {
	next    scheduler.Binder
	mu      sync.Mutex
	failed  map[string]bool
	binds   atomic.Int32
	failErr error
}

func (b *flakyBinder) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	b.binds.Add(1)
	b.mu.Lock()
	first := !b.failed[pod.Name]
	b.failed[pod.Name] = true
	b.mu.Unlock()
	if first {
		return b.failErr
	}
	return b.next.Bind(ctx, pod, node)
}

func TestIntegrationFailedBindRequeues(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("n1", "1", "8Gi"))
	binder := &flakyBinder{next: &scheduler.APIBinder{Client: c.client}, failed: map[string]bool{}, failErr: errors.New("etcd is on fire")}
	profile := plugins.DefaultProfile("")
	profile.Binder = binder
	s := c.startScheduler(t, []scheduler.Profile{profile})
	c.createPod(t, makePod("p", requests("1", "")))
	assert.Equal(t, "n1", c.waitBound(t, "default", "p"))
	assert.Equal(t, int32(2), binder.binds.Load())
	waitFor(t, "failure event", func() (bool, error) {
		return len(c.events(t, "default", "p", "FailedScheduling")) > 0, nil
	})
	ev := c.events(t, "default", "p", "FailedScheduling")[0]
	assert.True(t, strings.HasPrefix(ev.Message, `running Bind plugin "*scheduler_test.flakyBinder": etcd is on fire`), ev.Message)
	// The forgotten assumption freed the node: the bound pod counts once.
	waitFor(t, "cache confirms", func() (bool, error) {
		_, pods, assumed := s.Cache().Counts()
		return pods == 1 && assumed == 0, nil
	})
}

func TestIntegrationSchedulingGates(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("n1", "4", "8Gi"))
	s := c.startScheduler(t, nil)
	c.createPod(t, makePod("gated", func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	}))
	waitFor(t, "gated pod queued", func() (bool, error) {
		_, _, _, gated := s.Queue().Len()
		return gated == 1, nil
	})
	ctx := context.Background()
	p, err := c.client.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, p.Spec.NodeName)
	p.Spec.SchedulingGates = nil
	_, err = c.client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n1", c.waitBound(t, "default", "gated"))
}

func TestIntegrationMetrics(t *testing.T) {
	c := newCluster(t)
	c.createNode(t, makeNode("n1", "1", "1Gi"))
	reg := prometheus.NewRegistry()
	c.startScheduler(t, nil, scheduler.WithMetricsRegisterer(reg))
	c.createPod(t, makePod("ok", requests("100m", "")))
	c.waitBound(t, "default", "ok")
	c.createPod(t, makePod("too-big", requests("2", "")))
	waitFor(t, "unschedulable attempt", func() (bool, error) {
		return attempts(t, reg, "unschedulable") == 1, nil
	})
	waitFor(t, "scheduled attempt", func() (bool, error) {
		return attempts(t, reg, "scheduled") == 1, nil
	})
	waitFor(t, "pending gauge", func() (bool, error) {
		v, _ := metricValue(t, reg, "scheduler_pending_pods", "queue", "unschedulable")
		return v == 1, nil
	})
	for _, q := range []string{"active", "backoff", "gated"} {
		v, n := metricValue(t, reg, "scheduler_pending_pods", "queue", q)
		assert.Equal(t, 1, n, q)
		assert.Zero(t, v, q)
	}
	v, n := metricValue(t, reg, "scheduler_scheduling_attempt_duration_seconds", "profile", "default-scheduler")
	assert.Equal(t, 2, n, "one series per result")
	assert.Equal(t, float64(2), v, "two observations")
}
