package gc

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/gc/metaclient"
)

// newUnstartedGC returns a collector over a live in-process API server
// whose graph the test fills by hand (Run is never called).
func newUnstartedGC(t *testing.T) (*GarbageCollector, kubernetes.Interface) {
	t.Helper()
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); _ = st.Close() })
	rc := &rest.Config{Host: hs.URL, QPS: -1}
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	md, _, err := metaclient.ForConfig(context.Background(), rc)
	require.NoError(t, err)
	m, err := controller.NewManager(controller.ManagerConfig{Client: client, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	gc, err := New(m.Context(), Config{Metadata: md})
	require.NoError(t, err)
	t.Cleanup(func() {
		gc.attemptToDelete.ShutDown()
		gc.attemptToOrphan.ShutDown()
		gc.changes.ShutDown()
	})
	return gc, client
}

func podNode(p *corev1.Pod, owners []metav1.OwnerReference) *node {
	n := newNode(objectReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Namespace: p.Namespace}, true)
	n.owners = owners
	return n
}

// TestDecisionsUseLiveState: the graph (the informers' view) may be stale;
// what the collector deletes is decided on live reads.
func TestDecisionsUseLiveState(t *testing.T) {
	gc, client := newUnstartedGC(t)
	ctx := context.Background()
	owner, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	liveRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
	staleRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "5b1b8d8e-0000-4000-8000-00000000000a"}

	// The cache says the pod's only owner is gone, but the pod was adopted
	// by a live owner meanwhile: it must stay.
	p, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "adopted", OwnerReferences: []metav1.OwnerReference{liveRef}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, gc.attemptToDeleteItem(ctx, podNode(p, []metav1.OwnerReference{staleRef})))
	_, err = client.CoreV1().Pods("default").Get(ctx, "adopted", metav1.GetOptions{})
	require.NoError(t, err, "a pod with a live owner is never deleted")

	// The cache says the item is gone-owner-free; the live item with a
	// different UID (re-created under the same name) is not touched.
	other := podNode(p, []metav1.OwnerReference{staleRef})
	other.identity.UID = "5b1b8d8e-0000-4000-8000-00000000000b"
	err = gc.attemptToDeleteItem(ctx, other)
	assert.ErrorIs(t, err, errVirtualDeleteQueued)
	_, err = client.CoreV1().Pods("default").Get(ctx, "adopted", metav1.GetOptions{})
	require.NoError(t, err, "another object under the same name is never deleted")

	// Its owner really is gone now: it is deleted.
	require.NoError(t, client.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}))
	require.NoError(t, gc.attemptToDeleteItem(ctx, podNode(p, []metav1.OwnerReference{liveRef})))
	_, err = client.CoreV1().Pods("default").Get(ctx, "adopted", metav1.GetOptions{})
	assert.Error(t, err, "a pod whose owner is gone is collected")
}

// TestDeleteCarriesPreconditions: an object that changed after it was
// verified is not deleted on the stale verification.
func TestDeleteCarriesPreconditions(t *testing.T) {
	gc, client := newUnstartedGC(t)
	ctx := context.Background()
	p, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "changing"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	id := podNode(p, nil).identity
	p.Labels = map[string]string{"changed": "yes"}
	_, err = client.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	err = gc.deleteObject(ctx, id, p.ResourceVersion, metav1.DeletePropagationBackground)
	require.Error(t, err, "the resourceVersion precondition fails")
	_, err = client.CoreV1().Pods("default").Get(ctx, "changing", metav1.GetOptions{})
	require.NoError(t, err)
	_ = ptr.To(0)
}
