package deployment_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller/deployment"
)

// tracker follows pods and ReplicaSets of one app through watches and
// records the extremes a rollout reaches.
type tracker struct {
	mu           sync.Mutex
	pods         map[string]*corev1.Pod
	specs        map[string]int32
	minAvailable int
	maxSpecSum   int32
	violations   []string
	// onPodAdded is called with the pod and the pods present before it.
	onPodAdded func(p *corev1.Pod, before map[string]*corev1.Pod) string
}

func startTracker(t *testing.T, c kubernetes.Interface, app string, onPodAdded func(*corev1.Pod, map[string]*corev1.Pod) string) *tracker {
	t.Helper()
	tr := &tracker{pods: map[string]*corev1.Pod{}, specs: map[string]int32{}, minAvailable: 1 << 30, onPodAdded: onPodAdded}
	ctx, cancel := context.WithCancel(context.Background())
	pw, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	require.NoError(t, err)
	rw, err := c.AppsV1().ReplicaSets("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range pw.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			tr.pod(ev.Type, p)
		}
	})
	wg.Go(func() {
		for ev := range rw.ResultChan() {
			rs, ok := ev.Object.(*appsv1.ReplicaSet)
			if !ok {
				continue
			}
			tr.rs(ev.Type, rs)
		}
	})
	t.Cleanup(func() {
		cancel()
		pw.Stop()
		rw.Stop()
		wg.Wait()
	})
	return tr
}

func (tr *tracker) pod(typ watch.EventType, p *corev1.Pod) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	_, known := tr.pods[p.Name]
	if typ == watch.Added && !known && tr.onPodAdded != nil {
		if v := tr.onPodAdded(p, tr.pods); v != "" {
			tr.violations = append(tr.violations, v)
		}
	}
	if typ == watch.Deleted {
		delete(tr.pods, p.Name)
	} else {
		tr.pods[p.Name] = p
	}
	n := 0
	for _, p := range tr.pods {
		if p.DeletionTimestamp == nil && isReady(p) {
			n++
		}
	}
	tr.minAvailable = min(tr.minAvailable, n)
}

func (tr *tracker) rs(typ watch.EventType, rs *appsv1.ReplicaSet) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if typ == watch.Deleted {
		delete(tr.specs, rs.Name)
	} else {
		tr.specs[rs.Name] = *rs.Spec.Replicas
	}
	var sum int32
	for _, n := range tr.specs {
		sum += n
	}
	tr.maxSpecSum = max(tr.maxSpecSum, sum)
}

// waitReady waits until the tracker saw n ready pods, then starts
// recording the minimum from there.
func (tr *tracker) waitReady(t *testing.T, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the tracker to see %d ready pods", n), func(context.Context) (bool, error) {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		ready := 0
		for _, p := range tr.pods {
			if p.DeletionTimestamp == nil && isReady(p) {
				ready++
			}
		}
		if ready != n {
			return false, nil
		}
		tr.minAvailable = ready
		return true, nil
	})
}

func (tr *tracker) results() (minAvailable int, maxSpecSum int32, violations []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.minAvailable, tr.maxSpecSum, append([]string(nil), tr.violations...)
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func setImage(t *testing.T, c kubernetes.Interface, name, image string) {
	t.Helper()
	d, err := c.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	d.Spec.Template.Spec.Containers[0].Image = image
	_, err = c.AppsV1().Deployments("default").Update(context.Background(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func TestRollingUpdateBounds(t *testing.T) {
	for _, tc := range []struct {
		name                string
		replicas            int32
		surge, unavailable  intstr.IntOrString
		wantSurge, wantUnav int32
	}{
		{"ints", 4, intstr.FromInt32(1), intstr.FromInt32(1), 1, 1},
		{"no surge", 5, intstr.FromInt32(0), intstr.FromInt32(2), 0, 2},
		{"percentages", 6, intstr.FromString("25%"), intstr.FromString("25%"), 2, 1},
		{"no unavailable", 3, intstr.FromString("50%"), intstr.FromInt32(0), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(),
				rolling(newDeployment("web", tc.replicas, "img:1"), tc.surge, tc.unavailable), metav1.CreateOptions{})
			require.NoError(t, err)
			first := waitComplete(t, e.Client, "web")
			tr := startTracker(t, e.Client, "web", nil)
			tr.waitReady(t, int(tc.replicas))

			setImage(t, e.Client, "web", "img:2")
			d := waitComplete(t, e.Client, "web")
			require.Greater(t, d.Generation, first.Generation)
			assert.Equal(t, "2", d.Annotations[deployment.RevisionAnnotation])
			for _, p := range livePods(t, e.Client, "web") {
				assert.Equal(t, "img:2", p.Spec.Containers[0].Image)
			}
			minAvail, maxSpec, _ := tr.results()
			assert.GreaterOrEqual(t, minAvail, int(tc.replicas-tc.wantUnav), "available pods dropped below replicas-maxUnavailable")
			assert.LessOrEqual(t, maxSpec, tc.replicas+tc.wantSurge, "ReplicaSets exceeded replicas+maxSurge")

			rss := ownedReplicaSets(t, e.Client, d)
			require.Len(t, rss, 2)
			for _, rs := range rss {
				if rs.Spec.Template.Spec.Containers[0].Image == "img:2" {
					assert.Equal(t, "2", rs.Annotations[deployment.RevisionAnnotation])
					assert.EqualValues(t, tc.replicas, *rs.Spec.Replicas)
				} else {
					assert.Equal(t, "1", rs.Annotations[deployment.RevisionAnnotation])
					assert.EqualValues(t, 0, *rs.Spec.Replicas)
				}
			}
		})
	}
}

func TestRecreateOrder(t *testing.T) {
	e := newEnv(t)
	d := newDeployment("web", 3, "img:1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), d, metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")

	var newPods int
	tr := startTracker(t, e.Client, "web", func(p *corev1.Pod, before map[string]*corev1.Pod) string {
		if p.Spec.Containers[0].Image != "img:2" {
			return ""
		}
		newPods++
		for _, o := range before {
			if o.Spec.Containers[0].Image == "img:1" {
				return fmt.Sprintf("new pod %s created while old pod %s still exists", p.Name, o.Name)
			}
		}
		return ""
	})
	tr.waitReady(t, 3)
	setImage(t, e.Client, "web", "img:2")
	waitComplete(t, e.Client, "web")
	_, maxSpec, violations := tr.results()
	assert.Empty(t, violations)
	assert.LessOrEqual(t, maxSpec, int32(3), "Recreate never runs both templates")
	tr.mu.Lock()
	assert.Equal(t, 3, newPods)
	tr.mu.Unlock()
}

func TestScaleUpAndDown(t *testing.T) {
	e := newEnv(t)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), newDeployment("web", 3, "img:1"), metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	for _, n := range []int32{5, 2} {
		scale, err := e.Client.AppsV1().Deployments("default").GetScale(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		scale.Spec.Replicas = n
		_, err = e.Client.AppsV1().Deployments("default").UpdateScale(t.Context(), "web", scale, metav1.UpdateOptions{})
		require.NoError(t, err)
		d := waitComplete(t, e.Client, "web")
		rss := ownedReplicaSets(t, e.Client, d)
		require.Len(t, rss, 1, "scaling creates no ReplicaSet")
		assert.EqualValues(t, n, *rss[0].Spec.Replicas)
		assert.Equal(t, fmt.Sprint(n), rss[0].Annotations[deployment.DesiredReplicasAnnotation])
		waitFor(t, fmt.Sprintf("%d live pods", n), func(context.Context) (bool, error) {
			return len(livePods(t, e.Client, "web")) == int(n), nil
		})
	}
}

func TestRevisionHistoryLimit(t *testing.T) {
	e := newEnv(t)
	d := newDeployment("web", 2, "img:1")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	_, err := e.Client.AppsV1().Deployments("default").Create(t.Context(), d, metav1.CreateOptions{})
	require.NoError(t, err)
	waitComplete(t, e.Client, "web")
	for _, img := range []string{"img:2", "img:3", "img:4"} {
		setImage(t, e.Client, "web", img)
		waitComplete(t, e.Client, "web")
	}
	waitFor(t, "old ReplicaSets beyond the history limit to be deleted", func(ctx context.Context) (bool, error) {
		d, err := e.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(ownedReplicaSets(t, e.Client, d)) == 2, nil
	})
	d, err = e.Client.AppsV1().Deployments("default").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	revs := map[string]string{}
	for _, rs := range ownedReplicaSets(t, e.Client, d) {
		revs[rs.Annotations[deployment.RevisionAnnotation]] = rs.Spec.Template.Spec.Containers[0].Image
	}
	assert.Equal(t, map[string]string{"3": "img:3", "4": "img:4"}, revs, "the newest old revision is kept")
}
