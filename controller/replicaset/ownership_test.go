package replicaset_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/replicaset"
)

func TestAdoptsMatchingOrphans(t *testing.T) {
	c := start(t, true)
	ctx := t.Context()
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
	}
	_, err := c.Client.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{})
	require.NoError(t, err)
	// A pod owned by another controller is never taken.
	other := orphan.DeepCopy()
	other.Name = "taken"
	other.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ReplicationController", Name: "rc", UID: "rc-uid", Controller: ptr.To(true)}}
	_, err = c.Client.CoreV1().Pods("default").Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err)

	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	waitAvailable(t, c.Client, "web", 2)
	pods, err := ownedPods(ctx, c.Client, rs)
	require.NoError(t, err)
	require.Len(t, pods, 2)
	names := []string{pods[0].Name, pods[1].Name}
	assert.Contains(t, names, "stray", "the orphan was adopted instead of creating a second pod")
	taken, err := c.Client.CoreV1().Pods("default").Get(ctx, "taken", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rc", metav1.GetControllerOf(taken).Name)
}

func TestReleasesPodsThatStopMatching(t *testing.T) {
	c := start(t, true)
	ctx := t.Context()
	rs, err := c.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 2), metav1.CreateOptions{})
	require.NoError(t, err)
	waitAvailable(t, c.Client, "web", 2)
	pods, err := ownedPods(ctx, c.Client, rs)
	require.NoError(t, err)
	p := pods[0]
	p.Labels = map[string]string{"app": "debug"}
	_, err = c.Client.CoreV1().Pods("default").Update(ctx, &p, metav1.UpdateOptions{})
	require.NoError(t, err)

	waitFor(t, "the relabelled pod to be released", func(ctx context.Context) (bool, error) {
		got, err := c.Client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && metav1.GetControllerOf(got) == nil, err
	})
	waitFor(t, "a replacement for the released pod", func(ctx context.Context) (bool, error) {
		pods, err := ownedPods(ctx, c.Client, rs)
		if err != nil || len(pods) != 2 {
			return false, err
		}
		return pods[0].Name != p.Name && pods[1].Name != p.Name, nil
	})
	waitAvailable(t, c.Client, "web", 2)
}

func TestReplicaFailureOnQuota(t *testing.T) {
	c := start(t, true)
	ctx := t.Context()
	_, err := c.Client.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 4), metav1.CreateOptions{})
	require.NoError(t, err)

	var rs *appsv1.ReplicaSet
	waitFor(t, "the ReplicaFailure condition", func(ctx context.Context) (bool, error) {
		var err error
		rs, err = c.Client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && replicaset.GetCondition(rs.Status, appsv1.ReplicaSetReplicaFailure) != nil, err
	})
	cond := replicaset.GetCondition(rs.Status, appsv1.ReplicaSetReplicaFailure)
	assert.Equal(t, corev1.ConditionTrue, cond.Status)
	assert.Equal(t, replicaset.ReasonFailedCreate, cond.Reason)
	assert.Regexp(t, `^pods "web-[a-z0-9]{5}" is forbidden: exceeded quota: q`, cond.Message)
	waitFor(t, "a FailedCreate event", func(ctx context.Context) (bool, error) {
		evs, err := c.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedCreate" && e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.Message, "Error creating: ") {
				return true, nil
			}
		}
		return false, nil
	})

	require.NoError(t, c.Client.CoreV1().ResourceQuotas("default").Delete(ctx, "q", metav1.DeleteOptions{}))
	rs = waitAvailable(t, c.Client, "web", 4)
	waitFor(t, "the condition to clear", func(ctx context.Context) (bool, error) {
		rs, err := c.Client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && replicaset.GetCondition(rs.Status, appsv1.ReplicaSetReplicaFailure) == nil, err
	})
}

func TestMinReadySeconds(t *testing.T) {
	c := start(t, true)
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 1
	_, err := c.Client.AppsV1().ReplicaSets("default").Create(t.Context(), rs, metav1.CreateOptions{})
	require.NoError(t, err)
	waitFor(t, "ready but not yet available", func(ctx context.Context) (bool, error) {
		rs, err := c.Client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && rs.Status.ReadyReplicas == 2, err
	})
	// Nothing but the requeue after minReadySeconds changes the status now.
	waitAvailable(t, c.Client, "web", 2)
}

// slowWatches delays every read of pod watch streams, so the pod
// informer lags far behind the controller's own writes.
type slowWatches struct {
	rt    http.RoundTripper
	delay time.Duration
}

func (s slowWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") != "true" || !strings.HasSuffix(req.URL.Path, "/pods") {
		return resp, err
	}
	resp.Body = slowBody{ReadCloser: resp.Body, delay: s.delay}
	return resp, nil
}

type slowBody struct {
	io.ReadCloser
	delay time.Duration
}

func (b slowBody) Read(p []byte) (int, error) {
	time.Sleep(b.delay)
	return b.ReadCloser.Read(p)
}

// TestNoOverCreationWithSlowInformer: the pod informer lags 300ms per read
// while ReplicaSet events arrive at once (each status write wakes the
// controller again); expectations must keep the controller from creating
// pods its cache has not seen yet.
func TestNoOverCreationWithSlowInformer(t *testing.T) {
	c := controllertest.NewCluster(t)
	ctx := t.Context()
	slowCfg := rest.CopyConfig(c.Config)
	slowCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return slowWatches{rt: rt, delay: 300 * time.Millisecond}
	}
	slowClient, err := kubernetes.NewForConfig(slowCfg)
	require.NoError(t, err)

	var mu sync.Mutex
	created := map[string]bool{}
	w, err := c.Client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				mu.Lock()
				created[ev.Object.(*corev1.Pod).Name] = true
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })

	controllertest.StartFakeKubelet(t, c.Client, controllertest.KubeletConfig{Schedule: true})
	c.StartManager(t, controller.ManagerConfig{Informers: informers.NewSharedInformerFactory(slowClient, 0)},
		controllertest.Registration{Name: replicaset.Name, New: replicaset.NewFunc()})
	_, err = c.Client.AppsV1().ReplicaSets("default").Create(ctx, newRS("web", 10), metav1.CreateOptions{})
	require.NoError(t, err)
	waitAvailable(t, c.Client, "web", 10)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, created, 10, fmt.Sprintf("pods created: %v", created))
}
