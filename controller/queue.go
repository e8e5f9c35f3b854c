package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// MaxRetries is how many times RunWorkers retries a key with backoff before
// dropping it (a later watch event or resync brings it back), as Kubernetes'
// controllers do with their maxRetries of 15.
const MaxRetries = 15

// NewQueue returns a rate-limited work queue named name (the name labels
// client-go's workqueue metrics). The rate limiter is the one Kubernetes
// controllers use: per-item exponential backoff from 5 ms to 1000 s, and an
// overall token bucket of 10 qps with a burst of 100.
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
}

// KeyFunc returns the namespace/name key of obj (name alone for cluster
// scoped objects). It accepts cache.DeletedFinalStateUnknown tombstones.
func KeyFunc(obj any) (string, error) {
	return cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
}

// ErrCacheSync is returned by WaitForCacheSync when ctx ends first.
var ErrCacheSync = errors.New("informer caches did not sync")

// WaitForCacheSync waits until every synced function reports true. It
// returns an error wrapping ErrCacheSync when ctx is done first.
func WaitForCacheSync(ctx context.Context, name string, synced ...cache.InformerSynced) error {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("controller %s: %w: %w", name, ErrCacheSync, context.Cause(ctx))
	}
	return nil
}

// RequeueAfter is an error a sync function returns to have its key handled
// again after a delay without counting as a failure (e.g. minReadySeconds
// or a progress deadline still running).
type RequeueAfter time.Duration

func (r RequeueAfter) Error() string { return fmt.Sprintf("requeue after %s", time.Duration(r)) }

// RunWorkers runs workers goroutines that take keys from q and call sync.
// A nil error forgets the key's backoff; a RequeueAfter error re-adds the
// key after its delay; any other error re-adds it with rate-limited backoff
// up to MaxRetries. RunWorkers shuts q down when ctx is done and returns
// once every worker finished its current key.
func RunWorkers[T comparable](ctx context.Context, name string, workers int, q workqueue.TypedRateLimitingInterface[T],
	sync func(ctx context.Context, key T) error, log *slog.Logger) {
	if workers < 1 {
		workers = 1
	}
	if log == nil {
		log = slog.Default()
	}
	var wg waitGroup
	for range workers {
		wg.Go(func() {
			for processNext(ctx, name, q, sync, log) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}

// waitGroup is sync.WaitGroup (named so the sync parameter does not shadow it).
type waitGroup = sync.WaitGroup

func processNext[T comparable](ctx context.Context, name string, q workqueue.TypedRateLimitingInterface[T],
	sync func(ctx context.Context, key T) error, log *slog.Logger) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	var after RequeueAfter
	switch {
	case err == nil:
		q.Forget(key)
	case errors.As(err, &after):
		q.Forget(key)
		q.AddAfter(key, time.Duration(after))
	case ctx.Err() != nil:
		// Shutting down: the next run starts from the informers again.
	case q.NumRequeues(key) < MaxRetries:
		log.Debug("sync failed, retrying", "controller", name, "key", key, "err", err)
		q.AddRateLimited(key)
	default:
		log.Warn("sync failed, dropping key", "controller", name, "key", key, "retries", q.NumRequeues(key), "err", err)
		q.Forget(key)
	}
	return true
}

// NewQueueWithClock is NewQueue whose delays (AddAfter, backoff) run on
// clk when it can make tickers (clock.WithTicker, as the real and the fake
// clocks can), so tests with a fake clock control requeues too.
func NewQueueWithClock[T comparable](name string, clk clock.Clock) workqueue.TypedRateLimitingInterface[T] {
	wt, ok := clk.(clock.WithTicker)
	if !ok {
		return NewQueue[T](name)
	}
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, Clock: wt})
}
