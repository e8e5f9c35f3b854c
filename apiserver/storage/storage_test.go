package storage_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

func TestRevision(t *testing.T) {
	for _, tc := range []struct {
		rv      string
		want    uint64
		invalid bool
	}{
		{"", 0, false},
		{"1", 1, false},
		{"18446744073709551615", 1<<64 - 1, false},
		{"-1", 0, true},
		{"abc", 0, true},
		{"1.5", 0, true},
	} {
		got, err := storage.Revision(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: tc.rv}})
		if tc.invalid {
			assert.ErrorIs(t, err, storage.ErrInvalidObject, tc.rv)
			continue
		}
		require.NoError(t, err, tc.rv)
		assert.Equal(t, tc.want, got, tc.rv)
	}
	_, err := storage.Revision(&metav1.Status{})
	assert.ErrorIs(t, err, storage.ErrInvalidObject, "no object metadata")
}

func TestSetRevision(t *testing.T) {
	p := &corev1.Pod{}
	require.NoError(t, storage.SetRevision(p, 42))
	assert.Equal(t, "42", p.ResourceVersion)
	require.NoError(t, storage.SetRevision(p, 0))
	assert.Empty(t, p.ResourceVersion)
	assert.ErrorIs(t, storage.SetRevision(&metav1.Status{}, 1), storage.ErrInvalidObject)
	var obj runtime.Object = &corev1.ConfigMap{}
	require.NoError(t, storage.SetRevision(obj, 7))
	rv, err := storage.Revision(obj)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), rv)
}

func TestContinueRoundTrip(t *testing.T) {
	for _, tc := range []struct{ prefix, next string }{
		{"/registry/pods/ns/", "/registry/pods/ns/a\x00"},
		{"/registry/pods/", "/registry/pods/ns/a\x00"},
		{"/registry/apps/deployments/", "/registry/apps/deployments/kube-system/coredns\x00"},
		{"/registry/pods/a", "/registry/pods/ab/x\x00"}, // prefix without a trailing slash
	} {
		token, err := storage.EncodeContinue(tc.prefix, tc.next, 99)
		require.NoError(t, err, tc)
		raw, err := base64.RawURLEncoding.DecodeString(token)
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"v":"meta.k8s.io/v1","rv":99,"start":"/`)
		key, rv, err := storage.DecodeContinue(tc.prefix, token)
		require.NoError(t, err, tc)
		assert.Equal(t, tc.next, key)
		assert.Equal(t, uint64(99), rv)
	}
}

func TestEncodeContinueErrors(t *testing.T) {
	_, err := storage.EncodeContinue("/registry/pods/a/", "/registry/pods/b/x", 1)
	assert.Error(t, err, "key outside the prefix")
	_, err = storage.EncodeContinue("/registry/pods/", "/registry/pods/", 1)
	assert.Error(t, err, "empty start")
	_, err = storage.EncodeContinue("/registry/pods/", "/registry/pods/x", 0)
	assert.Error(t, err, "revision 0")
}

func TestDecodeContinueErrors(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, token := range map[string]string{
		"empty":       "",
		"not base64":  "!!",
		"not json":    enc("nope"),
		"version":     enc(`{"v":"meta.k8s.io/v2","rv":1,"start":"/a"}`),
		"no rv":       enc(`{"v":"meta.k8s.io/v1","start":"/a"}`),
		"no start":    enc(`{"v":"meta.k8s.io/v1","rv":1}`),
		"dot-dot":     enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"/../secrets/x"}`),
		"double dash": enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"//x"}`),
		"negative rv": enc(`{"v":"meta.k8s.io/v1","rv":-1,"start":"/a"}`),
	} {
		_, _, err := storage.DecodeContinue("/registry/pods/ns/", token)
		assert.ErrorIs(t, err, storage.ErrInvalidContinue, name)
	}
	assert.ErrorIs(t, storage.ErrContinueExpired, storage.ErrInvalidContinue)
}

func FuzzDecodeContinue(f *testing.F) {
	good, _ := storage.EncodeContinue("/registry/pods/ns/", "/registry/pods/ns/a\x00", 5)
	f.Add("/registry/pods/ns/", good)
	f.Add("/registry/pods/", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIvLi4vYSJ9")
	f.Fuzz(func(t *testing.T, prefix, token string) {
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		key, rv, err := storage.DecodeContinue(prefix, token)
		if err != nil {
			return
		}
		if !strings.HasPrefix(key, prefix) {
			t.Fatalf("token %q resumes at %q, outside prefix %q", token, key, prefix)
		}
		if rv == 0 {
			t.Fatalf("token %q decoded to revision 0", token)
		}
	})
}

func TestKeyAndPrefix(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	assert.Equal(t, "/registry/pods/ns/a", storage.Key(pods, "ns", "a"))
	assert.Equal(t, "/registry/pods/ns/", storage.Key(pods, "ns", ""))
}
