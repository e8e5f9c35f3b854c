package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// protobufType is the Kubernetes protobuf media type.
const protobufType = runtime.ContentTypeProtobuf

// exchange is one request and its response's content type.
type exchange struct {
	method, path, query, requestType, responseType string
}

// recorder is an http.RoundTripper noting the content types on the wire.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.seen = append(r.seen, exchange{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Get("Content-Type"), resp.Header.Get("Content-Type")})
	r.mu.Unlock()
	return resp, nil
}

// find returns the first recorded exchange matching.
func (r *recorder) find(t *testing.T, method, path string, watching bool) exchange {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.seen {
		if e.method == method && e.path == path && strings.Contains(e.query, "watch=true") == watching {
			return e
		}
	}
	t.Fatalf("no %s %s (watch=%v) among %+v", method, path, watching, r.seen)
	return exchange{}
}

// TestProtobufClient: a client speaking protobuf, as kube-scheduler and the
// kubelet do, creates, gets, lists and watches pods; the server answers in
// protobuf (checked on the wire). It runs on the memory store, so the
// suite covers both backends.
func TestProtobufClient(t *testing.T) {
	t.Parallel()
	srv := startAPIServer(t, withMemoryStore())
	rec := &recorder{}
	cfg := srv.RESTConfig()
	cfg.ContentType = protobufType
	cfg.AcceptContentTypes = protobufType + "," + runtime.ContentTypeJSON
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	pods := client.CoreV1().Pods("default")

	first := loadPod(t, podManifest)
	created, err := pods.Create(testContext(t, apiTimeout), first, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.PodPending, created.Status.Phase)
	assert.NotEmpty(t, created.UID)
	require.Len(t, created.Spec.Containers[0].Env, 2)
	assert.Equal(t, "metadata.name", created.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath)
	assert.Equal(t, "v1", created.Spec.Containers[0].Env[1].ValueFrom.FieldRef.APIVersion, "defaulted")

	got, err := pods.Get(testContext(t, apiTimeout), "nginx", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, got.ResourceVersion)

	list, err := pods.List(testContext(t, apiTimeout), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, created.UID, list.Items[0].UID)

	w, err := pods.Watch(testContext(t, apiTimeout), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	second := loadPod(t, podManifest)
	second.Name = "second"
	_, err = pods.Create(testContext(t, apiTimeout), second, metav1.CreateOptions{})
	require.NoError(t, err)
	labelled := getPod(t, client, "second")
	labelled.Labels["seen"] = "yes"
	_, err = pods.Update(testContext(t, apiTimeout), labelled, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, pods.Delete(testContext(t, apiTimeout), "second", metav1.DeleteOptions{}))
	for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		ev := nextEvent(t, w)
		require.Equal(t, want, ev.Type, "event %+v", ev)
		pod, ok := ev.Object.(*corev1.Pod)
		require.True(t, ok, "event object %T", ev.Object)
		assert.Equal(t, "second", pod.Name)
		if want != watch.Added {
			assert.Equal(t, "yes", pod.Labels["seen"])
		}
	}

	assert.Equal(t, protobufType, rec.find(t, http.MethodPost, "/api/v1/namespaces/default/pods", false).requestType)
	for _, e := range []exchange{
		rec.find(t, http.MethodPost, "/api/v1/namespaces/default/pods", false),
		rec.find(t, http.MethodGet, "/api/v1/namespaces/default/pods/nginx", false),
		rec.find(t, http.MethodGet, "/api/v1/namespaces/default/pods", false),
		rec.find(t, http.MethodPut, "/api/v1/namespaces/default/pods/second", false),
	} {
		assert.Equal(t, protobufType, e.responseType, "%s %s", e.method, e.path)
	}
	assert.Equal(t, protobufType+";stream=watch", rec.find(t, http.MethodGet, "/api/v1/namespaces/default/pods", true).responseType)
}

// nextEvent reads one watch event or fails after watchTimeout.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(watchTimeout):
		t.Fatalf("no watch event within %s", watchTimeout)
		return watch.Event{}
	}
}

var _ http.RoundTripper = (*recorder)(nil)
