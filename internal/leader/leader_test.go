package leader_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/internal/leader"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// cuttable is a transport that can be cut off, as when a process dies or
// loses its network: requests fail, nothing is released.
type cuttable struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *cuttable) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("cut off")
	}
	return c.next.RoundTrip(r)
}

func client(t *testing.T, cfg *rest.Config) (kubernetes.Interface, *cuttable) {
	t.Helper()
	c := &cuttable{}
	rc := rest.CopyConfig(cfg)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		c.next = rt
		return c
	}
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return cs, c
}

func opts(name, id string) leader.Options {
	o := leader.DefaultOptions(name)
	o.Identity = id
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 2*time.Second, 500*time.Millisecond
	return o
}

// candidate runs leader.Run in the background, counting active leaders.
type candidate struct {
	leading atomic.Bool
	result  chan error
}

func start(ctx context.Context, cs kubernetes.Interface, o leader.Options, active, maxActive *atomic.Int32) *candidate {
	c := &candidate{result: make(chan error, 1)}
	go func() {
		c.result <- leader.Run(ctx, cs, o, quiet, func(ctx context.Context) error {
			n := active.Add(1)
			for {
				m := maxActive.Load()
				if n <= m || maxActive.CompareAndSwap(m, n) {
					break
				}
			}
			c.leading.Store(true)
			<-ctx.Done()
			c.leading.Store(false)
			active.Add(-1)
			return nil
		})
	}()
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 60*time.Second, 20*time.Millisecond, what)
}

func TestStandbyTakesOverWhenTheLeaderDies(t *testing.T) {
	cluster := controllertest.NewCluster(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var active, maxActive atomic.Int32
	csA, netA := client(t, cluster.Config)
	csB, _ := client(t, cluster.Config)
	a := start(ctx, csA, opts("kube-scheduler", "a"), &active, &maxActive)
	waitFor(t, "a leads", a.leading.Load)
	b := start(ctx, csB, opts("kube-scheduler", "b"), &active, &maxActive)

	lease, err := cluster.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", *lease.Spec.HolderIdentity)

	netA.cut.Store(true) // a can no longer renew: it stops, b takes over
	select {
	case err := <-a.result:
		require.ErrorIs(t, err, leader.ErrLost)
	case <-time.After(60 * time.Second):
		t.Fatal("a did not stop after losing the lease")
	}
	waitFor(t, "b leads", b.leading.Load)
	assert.Equal(t, int32(1), maxActive.Load(), "never two leaders at once")
	lease, err = cluster.Client.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", *lease.Spec.HolderIdentity)
	assert.GreaterOrEqual(t, *lease.Spec.LeaseTransitions, int32(1))
}

func TestShutdownReleasesTheLease(t *testing.T) {
	cluster := controllertest.NewCluster(t)
	var active, maxActive atomic.Int32
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	a := start(ctxA, cluster.Client, opts("kube-controller-manager", "a"), &active, &maxActive)
	waitFor(t, "a leads", a.leading.Load)
	b := start(ctxB, cluster.Client, opts("kube-controller-manager", "b"), &active, &maxActive)
	stopA()
	require.NoError(t, <-a.result, "a clean shutdown is not an error")
	lease, err := cluster.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "a", "released on shutdown")
	waitFor(t, "b leads", b.leading.Load)
	assert.Equal(t, int32(1), maxActive.Load())
	stopB()
	require.NoError(t, <-b.result)
}

func TestLeadErrorIsReturned(t *testing.T) {
	cluster := controllertest.NewCluster(t)
	boom := errors.New("boom")
	err := leader.Run(context.Background(), cluster.Client, opts("x", "a"), quiet, func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	// The lease was given up: another candidate leads at once.
	got := make(chan struct{})
	go func() {
		_ = leader.Run(context.Background(), cluster.Client, opts("x", "b"), quiet, func(context.Context) error { close(got); return nil })
	}()
	select {
	case <-got:
	case <-time.After(60 * time.Second):
		t.Fatal("b did not lead")
	}
}

func TestDisabledRunsAtOnce(t *testing.T) {
	o := leader.DefaultOptions("x")
	o.Enabled = false
	ran := false
	require.NoError(t, leader.Run(context.Background(), nil, o, quiet, func(context.Context) error { ran = true; return nil }))
	assert.True(t, ran)
}

func TestInvalidTimings(t *testing.T) {
	cluster := controllertest.NewCluster(t)
	o := opts("x", "a")
	o.RenewDeadline = o.LeaseDuration
	err := leader.Run(context.Background(), cluster.Client, o, quiet, func(context.Context) error { return nil })
	require.Error(t, err)
}
