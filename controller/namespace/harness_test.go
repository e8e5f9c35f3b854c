package namespace_test

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/gc/metaclient"
	"github.com/podkit/podkit/internal/testutil"
)

// cluster is an in-process API server (reference configuration, memory
// store) served over HTTP, with a client.
type cluster struct {
	client   kubernetes.Interface
	metadata metadata.Interface
	config   *rest.Config
	url      string
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	c := controllertest.NewCluster(t)
	md, native, err := metaclient.ForConfig(context.Background(), c.Config)
	require.NoError(t, err)
	t.Logf("metadata client: native PartialObjectMetadata=%v", native)
	return &cluster{client: c.Client, metadata: md, config: c.Config, url: c.URL}
}

// run runs a controller manager with the given controllers until the test
// ends.
func (c *cluster) run(t *testing.T, ctrls map[string]controller.NewFunc) {
	t.Helper()
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client, Logger: slog.New(slog.DiscardHandler), Workers: 2})
	require.NoError(t, err)
	for name, fn := range ctrls {
		require.NoError(t, m.Register(name, fn))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// eventually polls cond every 10ms until it holds (30s at most).
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, cond)
	require.NoError(t, err, "waiting for %s", what)
}

// kubectl runs the real kubectl 1.32 against the cluster and returns its
// exit code, stdout and stderr.
func (c *cluster) kubectl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	bin := testutil.Kubectl(t, 32)
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	require.NoError(t, app.WriteKubeconfig(kubeconfig, c.url, "podkit"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "KUBECONFIG=" + kubeconfig, "NO_PROXY=127.0.0.1"}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	require.NoError(t, ctx.Err(), "kubectl %s timed out", strings.Join(args, " "))
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
