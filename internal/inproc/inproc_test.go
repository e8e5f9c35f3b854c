package inproc_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/internal/inproc"
)

func newClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(t.Context()))
	return kubernetes.NewForConfigOrDie(inproc.RESTConfig(srv.Handler()))
}

func TestClientGoOverInproc(t *testing.T) {
	c := newClient(t)
	ctx := t.Context()
	w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Added, ev.Type)
		assert.Equal(t, "a", ev.Object.(*corev1.ConfigMap).Name)
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	_, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "errors keep their Status: %v", err)
	list, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}

func TestClosingTheBodyEndsTheHandler(t *testing.T) {
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(done)
	})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://x/stream", nil)
	require.NoError(t, err)
	resp, err := inproc.Transport(h).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("handler still running after the body was closed")
	}
}

func TestPanicIsAnError(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	resp, err := inproc.Transport(h).RoundTrip(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	_, err = io.ReadAll(resp.Body)
	assert.ErrorContains(t, err, "boom")
}

// The metadata client (garbage collector, namespace controller) gets
// objects as PartialObjectMetadata.
func TestMetadataClient(t *testing.T) {
	st := memory.New()
	cfg, err := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(t.Context()))
	rc := inproc.RESTConfig(srv.Handler())
	c := kubernetes.NewForConfigOrDie(rc)
	ctx := t.Context()
	_, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"a": "b"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	md := metadata.NewForConfigOrDie(rc)
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	list, err := md.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, i := range list.Items {
		names = append(names, i.Name)
	}
	assert.Contains(t, names, "m")
	got, err := md.Resource(gvr).Namespace("default").Get(ctx, "m", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b"}, got.Labels)
}

// Writes run the handler in the caller's goroutine and return the whole
// buffered response; everything else streams. Both must look alike to the
// client.
func TestBufferedWrites(t *testing.T) {
	big := strings.Repeat("y", 3<<20)
	tests := []struct {
		name     string
		method   string
		path     string
		header   http.Header
		h        http.HandlerFunc
		code     int
		body     string
		readErr  string
		hdrValue string
	}{
		{name: "created", method: http.MethodPost, path: "/api/v1/namespaces/a/pods",
			h: func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("X-Got", string(b))
				w.WriteHeader(http.StatusCreated)
				w.Header().Set("X-Late", "ignored") // after WriteHeader, as net/http
				_, _ = w.Write([]byte("ok"))
			}, code: http.StatusCreated, body: "ok", hdrValue: "req"},
		{name: "implicit 200", method: http.MethodPut, path: "/x", h: func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(big))
		}, code: http.StatusOK, body: big},
		{name: "no body", method: http.MethodDelete, path: "/x", h: func(w http.ResponseWriter, r *http.Request) {}, code: http.StatusOK},
		{name: "panic", method: http.MethodPatch, path: "/x", h: func(w http.ResponseWriter, r *http.Request) { panic("boom") },
			code: http.StatusInternalServerError, readErr: "boom"},
		{name: "abort", method: http.MethodPost, path: "/x", h: func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) },
			code: http.StatusInternalServerError, readErr: "aborted"},
		{name: "streamed upgrade", method: http.MethodPost, path: "/api/v1/namespaces/a/pods/p/exec", header: http.Header{"Upgrade": {"websocket"}},
			h: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				_, _ = w.Write([]byte("stream"))
			}, code: http.StatusOK, body: "stream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://x"+tc.path, strings.NewReader("req"))
			require.NoError(t, err)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := inproc.Transport(tc.h).RoundTrip(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			if tc.readErr != "" {
				assert.ErrorContains(t, err, tc.readErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.body, string(b))
			if tc.hdrValue != "" {
				assert.Equal(t, tc.hdrValue, resp.Header.Get("X-Got"))
				assert.Empty(t, resp.Header.Get("X-Late"))
			}
		})
	}
}

// A buffered write's handler sees its context end once it returns, and a
// body read after Close fails.
func TestBufferedWriteLifecycle(t *testing.T) {
	var ctxDone <-chan struct{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxDone = r.Context().Done()
		_, _ = w.Write([]byte("data"))
	})
	req, _ := http.NewRequest(http.MethodPost, "http://x/y", nil)
	resp, err := inproc.Transport(h).RoundTrip(req)
	require.NoError(t, err)
	select {
	case <-ctxDone:
	default:
		t.Fatal("the handler's context is still live after it returned")
	}
	assert.EqualValues(t, 4, resp.ContentLength)
	require.NoError(t, resp.Body.Close())
	_, err = resp.Body.Read(make([]byte, 4))
	assert.Error(t, err)
}
