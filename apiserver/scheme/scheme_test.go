package scheme

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStorageCodecRoundTrip(t *testing.T) {
	s := New()
	codec := StorageCodec(s)
	for _, obj := range []runtime.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "7"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}},
	} {
		var buf bytes.Buffer
		require.NoError(t, codec.Encode(obj, &buf))
		require.True(t, obj.GetObjectKind().GroupVersionKind().Empty(), "encode must not leave TypeMeta on the caller's object")
		out, _, err := codec.Decode(buf.Bytes(), nil, nil)
		require.NoError(t, err)
		out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		require.Equal(t, obj, out)
	}
}
