// Package controllertest runs controllers in tests: an in-process podkit
// API server over HTTP on 127.0.0.1 (memory store, the default admission
// chain and validation), a Manager bound to the test's lifetime, and a fake
// kubelet that schedules pods onto fake nodes and reports them Running and
// Ready through the status subresource — real kubelets belong to another
// stage, and controllers only care about the API objects.
package controllertest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/controller"
)

// Cluster is an in-process API server reachable over HTTP.
type Cluster struct {
	// URL is the server's http://127.0.0.1:port address.
	URL string
	// Config is a client config for URL without client-side rate limits.
	Config *rest.Config
	// Client is a clientset over Config.
	Client kubernetes.Interface
}

// NewCluster starts an API server with app.DefaultConfig over a memory
// store; it stops when the test ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	st := memory.New()
	log := slog.New(slog.DiscardHandler)
	cfg, err := app.DefaultConfig(st, log)
	require.NoError(t, err)
	srv, err := apiserver.New(*cfg)
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
	return &Cluster{URL: hs.URL, Config: rc, Client: client}
}

// Kubeconfig writes a kubeconfig for the cluster into a temporary
// directory and returns its path.
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, app.WriteKubeconfig(path, c.URL, "podkit-test"))
	return path
}

// Registration names one controller to run.
type Registration struct {
	Name string
	New  controller.NewFunc
}

// StartManager runs a Manager over c.Client with the given controllers
// until the test ends (cfg.Client is filled in when nil); a Run error
// fails the test.
func (c *Cluster) StartManager(t testing.TB, cfg controller.ManagerConfig, regs ...Registration) *controller.Manager {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = c.Client
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := controller.NewManager(cfg)
	require.NoError(t, err)
	for _, r := range regs {
		require.NoError(t, m.Register(r.Name, r.New))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	})
	return m
}
