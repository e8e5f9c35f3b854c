package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a watch event")
	}
	return watch.Event{}
}

func TestWatchAddedModifiedDeleted(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	_, err = pods.Create(ctx, testPod("w"), metav1.CreateOptions{})
	require.NoError(t, err)
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Added, ev.Type)

	_, err = pods.Patch(ctx, "w", types.MergePatchType, []byte(`{"metadata":{"labels":{"v":"2"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	ev = nextEvent(t, w)
	assert.Equal(t, watch.Modified, ev.Type)
	assert.Equal(t, "2", ev.Object.(*corev1.Pod).Labels["v"])

	require.NoError(t, pods.Delete(ctx, "w", metav1.DeleteOptions{}))
	ev = nextEvent(t, w)
	assert.Equal(t, watch.Deleted, ev.Type)
}

func TestWatchResumeAndSelectorTransitions(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	pods := ts.client.CoreV1().Pods("default")
	p, err := pods.Create(ctx, testPod("r"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = pods.Patch(ctx, "r", types.MergePatchType, []byte(`{"metadata":{"labels":{"sel":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// Resuming from the create's revision replays the later change only.
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: p.ResourceVersion, LabelSelector: "sel=yes"})
	require.NoError(t, err)
	defer w.Stop()
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Added, ev.Type, "entering the selector is ADDED")

	_, err = pods.Patch(ctx, "r", types.MergePatchType, []byte(`{"metadata":{"labels":{"sel":"no"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	ev = nextEvent(t, w)
	assert.Equal(t, watch.Deleted, ev.Type, "leaving the selector is DELETED")
}

func TestWatchTooOldResourceVersionIsGone(t *testing.T) {
	ts := newTestServer(t, func(c *apiserver.Config) { c.Store = memory.New(memory.WithHistory(5)) })
	ctx := context.Background()
	cms := ts.client.CoreV1().ConfigMaps("default")
	first, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c0"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := cms.Patch(ctx, "c0", types.MergePatchType, []byte(`{"data":{"i":"`+string(rune('a'+i))+`"}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		require.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "got %v", err)
		return
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	require.Equal(t, watch.Error, ev.Type)
	st := apierrors.FromObject(ev.Object)
	assert.True(t, apierrors.IsResourceExpired(st) || apierrors.IsGone(st), "got %v", st)
}

func TestWatchSendInitialEventsAndBookmarks(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.client.CoreV1().ConfigMaps("default")
	for _, n := range []string{"a", "b"} {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	require.NoError(t, err)
	defer w.Stop()
	assert.Equal(t, watch.Added, nextEvent(t, w).Type)
	assert.Equal(t, watch.Added, nextEvent(t, w).Type)
	bm := nextEvent(t, w)
	require.Equal(t, watch.Bookmark, bm.Type)
	assert.Equal(t, "true", bm.Object.(*corev1.ConfigMap).Annotations["k8s.io/initial-events-end"])
}

func TestSharedInformer(t *testing.T) {
	ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(ts.client, 0)
	podInformer := factory.Core().V1().Pods()
	seen := make(chan string, 10)
	_, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { seen <- obj.(*corev1.Pod).Name },
	})
	require.NoError(t, err)
	_, err = ts.client.CoreV1().Pods("default").Create(ctx, testPod("before"), metav1.CreateOptions{})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced))
	_, err = ts.client.CoreV1().Pods("default").Create(ctx, testPod("after"), metav1.CreateOptions{})
	require.NoError(t, err)
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case n := <-seen:
			got[n] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("informer saw only %v", got)
		}
	}
	list, err := podInformer.Lister().List(labels.Everything())
	require.NoError(t, err)
	assert.Len(t, list, 2)
}

func TestWatchTimeoutSecondsEndsStream(t *testing.T) {
	ts := newTestServer(t)
	start := time.Now()
	w, err := ts.client.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
	require.NoError(t, err)
	defer w.Stop()
	for range w.ResultChan() {
	}
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "the server ends the watch after timeoutSeconds, not before")
}
