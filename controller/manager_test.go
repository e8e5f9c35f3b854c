package controller_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/podkit/podkit/controller"
)

// probe is a controller that records how it was run.
type probe struct {
	name    string
	synced  cache.InformerSynced
	workers chan int
	err     error
}

func (p *probe) Name() string { return p.name }

func (p *probe) Run(ctx context.Context, workers int) error {
	if err := controller.WaitForCacheSync(ctx, p.name, p.synced); err != nil {
		return err
	}
	p.workers <- workers
	if p.err != nil {
		return p.err
	}
	<-ctx.Done()
	return nil
}

func newProbe(name string, err error) (*probe, controller.NewFunc) {
	p := &probe{name: name, workers: make(chan int, 1), err: err}
	return p, func(c *controller.Context) (controller.Controller, error) {
		// Ask for an informer in the constructor: the Manager starts it.
		p.synced = c.Informers.Core().V1().Pods().Informer().HasSynced
		return p, nil
	}
}

func TestManagerRunsControllers(t *testing.T) {
	m, err := controller.NewManager(controller.ManagerConfig{
		Client: fake.NewSimpleClientset(), Workers: 3, WorkersPerController: map[string]int{"b": 7},
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	a, newA := newProbe("a", nil)
	b, newB := newProbe("b", nil)
	require.NoError(t, m.Register("a", newA))
	require.NoError(t, m.Register("b", newB))
	require.ErrorIs(t, m.Register("a", newA), controller.ErrDuplicate)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	assert.Equal(t, 3, <-a.workers)
	assert.Equal(t, 7, <-b.workers)
	require.ErrorIs(t, m.Register("c", newA), controller.ErrStarted)
	cancel()
	require.NoError(t, <-done)
}

func TestManagerStopsOnControllerError(t *testing.T) {
	m, err := controller.NewManager(controller.ManagerConfig{Client: fake.NewSimpleClientset(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	boom := errors.New("boom")
	_, newA := newProbe("a", nil)
	_, newBad := newProbe("bad", boom)
	require.NoError(t, m.Register("a", newA))
	require.NoError(t, m.Register("bad", newBad))
	err = m.Run(context.Background())
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), `controller "bad"`)
}

func TestManagerConstructorError(t *testing.T) {
	m, err := controller.NewManager(controller.ManagerConfig{Client: fake.NewSimpleClientset(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	bad := errors.New("bad config")
	require.NoError(t, m.Register("x", func(*controller.Context) (controller.Controller, error) { return nil, bad }))
	require.ErrorIs(t, m.Run(context.Background()), bad)

	_, err = controller.NewManager(controller.ManagerConfig{})
	require.Error(t, err, "a client is required")
}

func TestRunWorkers(t *testing.T) {
	q := controller.NewQueue[string]("test")
	var mu sync.Mutex
	attempts := map[string]int{}
	finished := make(chan string, 10)
	sync := func(_ context.Context, key string) error {
		mu.Lock()
		attempts[key]++
		n := attempts[key]
		mu.Unlock()
		switch {
		case key == "flaky" && n < 3:
			return errors.New("not yet")
		case key == "later" && n == 1:
			return controller.RequeueAfter(10 * time.Millisecond)
		}
		finished <- key
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		controller.RunWorkers(ctx, "test", 2, q, sync, slog.New(slog.DiscardHandler))
		close(done)
	}()
	for _, k := range []string{"ok", "flaky", "later"} {
		q.Add(k)
	}
	got := map[string]bool{}
	for len(got) < 3 {
		got[<-finished] = true
	}
	assert.Equal(t, map[string]bool{"ok": true, "flaky": true, "later": true}, got)
	mu.Lock()
	assert.Equal(t, 3, attempts["flaky"])
	assert.Equal(t, 2, attempts["later"])
	mu.Unlock()
	cancel()
	<-done
	assert.True(t, q.ShuttingDown())
}

func TestContextValidate(t *testing.T) {
	var nilCtx *controller.Context
	require.ErrorIs(t, nilCtx.Validate(), controller.ErrIncompleteContext)
	require.ErrorIs(t, (&controller.Context{}).Validate(), controller.ErrIncompleteContext)
	m, err := controller.NewManager(controller.ManagerConfig{Client: fake.NewSimpleClientset()})
	require.NoError(t, err)
	require.NoError(t, m.Context().Validate(), "the Manager fills every collaborator")
}
