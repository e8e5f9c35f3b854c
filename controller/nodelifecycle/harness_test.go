package nodelifecycle_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
)

// cluster is an in-process API server (reference configuration, memory
// store) served over HTTP, with a client.
type cluster struct {
	client kubernetes.Interface
	config *rest.Config
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := controllertest.NewCluster(t)
	return &cluster{client: c.Client, config: c.Config}
}

// run runs a controller manager with the given controllers until the test
// ends or stop is called (stop waits for it to return).
func (c *cluster) run(t *testing.T, ctrls map[string]controller.NewFunc, opts ...func(*controller.ManagerConfig)) (stop func()) {
	t.Helper()
	cfg := controller.ManagerConfig{Client: c.client, Logger: slog.New(slog.DiscardHandler), Workers: 2}
	for _, o := range opts {
		o(&cfg)
	}
	m, err := controller.NewManager(cfg)
	require.NoError(t, err)
	for name, fn := range ctrls {
		require.NoError(t, m.Register(name, fn))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually polls cond every 10ms until it holds (30s at most).
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, cond)
	require.NoError(t, err, "waiting for %s", what)
}
