package apiserver

import (
	"bytes"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podkit/podkit/apiserver/storage/memory"
)

// mediaTypeValues are Accept and Content-Type values: what clients send,
// and what the parser takes apart differently from a plain reading
// (case, blanks, lists, parameters, unknown types, non-ASCII that
// lowercases to ASCII).
var mediaTypeValues = []string{
	"application/json", "application/vnd.kubernetes.protobuf", "application/yaml",
	"application/vnd.kubernetes.protobuf,application/json", "application/json, */*",
	" application/JSON ", "APPLICATION/VND.KUBERNETES.PROTOBUF", "*/*", "application/*",
	"text/html,application/yaml", "text/plain", ",", " ", ",,application/json", "foo",
	"application/ json", "application/json;charset=utf-8", "application/json;q=0,application/yaml",
	"application/json;as=Table;v=v1;g=meta.k8s.io", "application/vnd.\u212Aubernetes.protobuf",
	"application/vnd.kubernetes.protobuf;stream=watch", "text/plain,\u212A/x,application/json",
}

func newTestServer(t *testing.T) *Server {
	t.Helper()
	srv, err := New(Config{Store: memory.New(memory.WithLogger(slog.New(slog.DiscardHandler))), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return srv
}

// TestPlainAcceptNegotiatesAsParsed: the unparsed reading of an Accept
// header picks what the parser picks, or leaves the header to it.
func TestPlainAcceptNegotiatesAsParsed(t *testing.T) {
	srv := newTestServer(t)
	for _, h := range mediaTypeValues {
		t.Run(h, func(t *testing.T) {
			var want string
			for _, item := range parseAccept(h) {
				if info, ok := srv.serializerFor(item.mediaType); ok && item.params["as"] == "" {
					want = info.MediaType
					break
				}
			}
			if info, ok := srv.plainAccept(h); ok {
				assert.Equal(t, want, info.MediaType)
			}
			req := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
			req.Header.Set("Accept", h)
			got, err := srv.negotiate(req)
			if want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got.info.MediaType)
		})
	}
}

// TestDecodeContentTypeAsParsed: a request body is refused as unsupported
// exactly when mime.ParseMediaType's reading of its Content-Type names no
// media type the server decodes.
func TestDecodeContentTypeAsParsed(t *testing.T) {
	srv := newTestServer(t)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`)
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	for _, ct := range append(mediaTypeValues, "") {
		t.Run(ct, func(t *testing.T) {
			parsed := ct
			if parsed == "" {
				parsed = "application/json"
			}
			mt, _, err := mime.ParseMediaType(parsed)
			_, served := srv.serializerFor(mt)
			supported := err == nil && served && mt != "*/*"
			req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			_, err = srv.decodeBody(httptest.NewRecorder(), req, body, gvk, &corev1.ConfigMap{})
			assert.Equal(t, !supported, apierrors.IsUnsupportedMediaType(err), "decode error: %v", err)
		})
	}
}

// TestStructFieldCachesLookups: the cached field lookup finds the fields
// reflect's FieldByName finds, for types with and without them.
func TestStructFieldCachesLookups(t *testing.T) {
	srv := newTestServer(t)
	for range 2 { // the second round reads the cache
		pod := &corev1.Pod{}
		f, ok := srv.structField(pod, "Spec")
		require.True(t, ok)
		f.FieldByName("NodeName").SetString("n")
		assert.Equal(t, "n", pod.Spec.NodeName)
		_, ok = srv.structField(&corev1.Event{}, "Spec")
		assert.False(t, ok)
		_, ok = srv.structField(&corev1.Event{}, "Status")
		assert.False(t, ok)
		ns := &corev1.Namespace{}
		f, ok = srv.structField(ns, "Name") // promoted from ObjectMeta
		require.True(t, ok)
		f.SetString("team-a")
		assert.Equal(t, "team-a", ns.Name)
	}
}
