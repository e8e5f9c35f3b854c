package apiserver

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage/memory"
)

func newSharedTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{Store: memory.New(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return s
}

// sharedEncodeTable holds objects as the store keeps them (empty TypeMeta)
// and the group version a response encodes them in.
var sharedEncodeTable = []struct {
	name string
	obj  runtime.Object
	gv   schema.GroupVersion
}{
	{"pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "7",
		Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
		corev1.SchemeGroupVersion},
	{"deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "default"}}, appsv1.SchemeGroupVersion},
	{"events.k8s.io event", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"}, Note: "n"}, eventsv1.SchemeGroupVersion},
	{"status (unversioned in v1)", &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, schema.GroupVersion{Version: "v1"}},
	{"kind already set", &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, corev1.SchemeGroupVersion},
	{"wrong group version asked", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, appsv1.SchemeGroupVersion},
	{"unstructured", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "u"}}}, corev1.SchemeGroupVersion},
}

// TestEncodeViewMatchesEncoder: the shallow-copy encoding of a shared
// object is byte for byte what the versioning encoder writes, and the
// object is left as it was.
func TestEncodeViewMatchesEncoder(t *testing.T) {
	s := newSharedTestServer(t)
	for _, tc := range sharedEncodeTable {
		for _, info := range s.codecs.SupportedMediaTypes() {
			t.Run(tc.name+"/"+info.MediaType, func(t *testing.T) {
				before := tc.obj.DeepCopyObject()
				want, err := s.encode(target{info: info}, tc.obj.DeepCopyObject(), tc.gv)
				if err != nil {
					_, err := s.encodeView(info.Serializer, tc.obj, tc.gv)
					require.Error(t, err)
					return
				}
				got, err := s.encodeView(info.Serializer, tc.obj, tc.gv)
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got))
				assert.True(t, apiequality.Semantic.DeepEqual(before, tc.obj), "the shared object was modified")
				assert.Equal(t, before.GetObjectKind().GroupVersionKind(), tc.obj.GetObjectKind().GroupVersionKind())
			})
		}
	}
}

// TestEncodeEventMatchesStreamEncoder: a cached watch frame is what the
// watch stream's own encoder writes for the event.
func TestEncodeEventMatchesStreamEncoder(t *testing.T) {
	s := newSharedTestServer(t)
	pod := sharedEncodeTable[0].obj
	_, viewed := s.viewKind(pod, corev1.SchemeGroupVersion)
	require.True(t, viewed, "a typed object in its own version is encoded from a view")
	_, viewed = s.viewKind(sharedEncodeTable[len(sharedEncodeTable)-1].obj, corev1.SchemeGroupVersion)
	require.False(t, viewed, "unstructured objects take the copying path")
	for _, info := range s.codecs.SupportedMediaTypes() {
		if info.StreamSerializer == nil {
			continue
		}
		for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			t.Run(info.MediaType+"/"+string(typ), func(t *testing.T) {
				tg := target{info: info}
				data, err := s.encode(tg, pod.DeepCopyObject(), corev1.SchemeGroupVersion)
				require.NoError(t, err)
				var want bytes.Buffer
				enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&want), info.StreamSerializer.Serializer)
				require.NoError(t, enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}))

				for range 2 { // computed, then cached
					got, err := s.encodeEvent(tg, typ, pod, corev1.SchemeGroupVersion)
					require.NoError(t, err)
					assert.Equal(t, want.String(), string(got))
				}
			})
		}
	}
}
