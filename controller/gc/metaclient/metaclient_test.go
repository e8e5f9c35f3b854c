package metaclient_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/controller/gc/metaclient"
)

func server(t *testing.T) *rest.Config {
	t.Helper()
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); _ = st.Close() })
	return &rest.Config{Host: hs.URL, QPS: -1}
}

var configmaps = corev1.SchemeGroupVersion.WithResource("configmaps")

func TestFromDynamic(t *testing.T) {
	rc := server(t)
	ctx := context.Background()
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(rc)
	require.NoError(t, err)
	md := metaclient.FromDynamic(d)
	res := md.Resource(configmaps).Namespace("default")

	w, err := res.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	cm, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}, Finalizers: []string{"example.com/f"}},
		Data:       map[string]string{"big": "payload"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Added, ev.Type)
		pm, ok := ev.Object.(*metav1.PartialObjectMetadata)
		require.True(t, ok, "watch events carry metadata: %T", ev.Object)
		assert.Equal(t, cm.UID, pm.UID)
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}

	got, err := res.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cm.UID, got.UID)
	assert.Equal(t, "ConfigMap", got.Kind)
	assert.Equal(t, map[string]string{"k": "v"}, got.Labels)

	list, err := res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "a", list.Items[0].Name)
	assert.NotEmpty(t, list.ResourceVersion)

	patched, err := res.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	assert.Empty(t, patched.Finalizers)

	require.NoError(t, res.Delete(ctx, "a", metav1.DeleteOptions{}))
	_, err = res.Get(ctx, "a", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	for _, n := range []string{"x", "y"} {
		_, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	list, err = res.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

// TestForConfig: whichever client it picks lists real metadata.
func TestForConfig(t *testing.T) {
	rc := server(t)
	md, native, err := metaclient.ForConfig(context.Background(), rc)
	require.NoError(t, err)
	t.Logf("native PartialObjectMetadata: %v", native)
	list, err := md.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	assert.Contains(t, names, metav1.NamespaceDefault)
}
