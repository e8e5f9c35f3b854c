package apiserver_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// testServer is an in-process API server on a memory store, served over
// real HTTP by httptest.
type testServer struct {
	srv    *apiserver.Server
	store  storage.Store
	http   *httptest.Server
	config *rest.Config
	client *kubernetes.Clientset
}

func newTestServer(t *testing.T, mutate ...func(*apiserver.Config)) *testServer {
	t.Helper()
	st := memory.New()
	cfg := apiserver.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := apiserver.New(cfg)
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(context.Background()))
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = st.Close()
	})
	rc := &rest.Config{Host: hs.URL, QPS: -1}
	client, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return &testServer{srv: srv, store: st, http: hs, config: rc, client: client}
}

// protobufClient returns a clientset speaking protobuf, as kube-scheduler
// and the kubelet do.
func (ts *testServer) protobufClient(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	rc := rest.CopyConfig(ts.config)
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return c
}
