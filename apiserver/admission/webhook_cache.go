package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/internal/storewatch"
	"github.com/podkit/podkit/apiserver/storage"
)

// The webhook configurations are read on every admitted write, so the
// plugins keep them in memory, fed by a watch of the store
// (internal/storewatch, which the RBAC and Node authorizers sit on too),
// as kube-apiserver keeps them in shared informers: a write costs a
// pointer load instead of a list and decode of every configuration. A
// configuration written, changed or deleted applies to the requests that
// arrive after the watch delivered it (the same eventual consistency as
// Kubernetes, usually well under a millisecond). Until the first list has
// filled the cache a write waits for it, bounded by
// WebhookConfig.SyncTimeout, then fails closed: webhooks are never skipped
// because the cache is not there yet.

// WebhookStore is what the webhook plugins read: the configurations,
// listed and watched, and the namespaces and services their selectors and
// service references name. storage.Store is one.
type WebhookStore interface {
	ObjectReader
	Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error)
}

var _ WebhookStore = storage.Store(nil)

// ErrWebhooksNotReady is wrapped by the error a write gets when the
// webhook configurations have not been read from the store in time (Run
// is not running, or the store does not answer).
var ErrWebhooksNotReady = errors.New("not yet ready to handle request")

// configCache is the webhooks of one configuration resource, in the order
// they run: configurations by name, then each one's webhooks in order. It
// is a storewatch.Handler; readers load the current slice without locking.
type configCache struct {
	gr      schema.GroupResource
	flatten func(obj runtime.Object) []webhookSpec
	synced  *storewatch.Synced

	mu    sync.Mutex                // serialises writers of objs
	objs  map[string]runtime.Object // by name
	hooks atomic.Pointer[[]webhookSpec]
	count atomic.Int64 // configurations held
}

func newConfigCache(gr schema.GroupResource, flatten func(obj runtime.Object) []webhookSpec) *configCache {
	c := &configCache{gr: gr, flatten: flatten, synced: storewatch.NewSynced(), objs: map[string]runtime.Object{}}
	c.hooks.Store(&[]webhookSpec{})
	return c
}

func objName(obj runtime.Object) string { return obj.(interface{ GetName() string }).GetName() }

// Replace implements storewatch.Handler.
func (c *configCache) Replace(objs []runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs = make(map[string]runtime.Object, len(objs))
	for _, o := range objs {
		c.objs[objName(o)] = o
	}
	c.rebuild()
}

// Upsert implements storewatch.Handler.
func (c *configCache) Upsert(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.objs[objName(obj)] = obj
	c.rebuild()
}

// Delete implements storewatch.Handler.
func (c *configCache) Delete(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.objs, objName(obj))
	c.rebuild()
}

// rebuild publishes the webhooks of c.objs; c.mu is held. Configurations
// change rarely, so the ordering work is done here, once per change,
// rather than on every request.
func (c *configCache) rebuild() {
	names := make([]string, 0, len(c.objs))
	for n := range c.objs {
		names = append(names, n)
	}
	sort.Strings(names)
	hooks := []webhookSpec{}
	for _, n := range names {
		hooks = append(hooks, c.flatten(c.objs[n])...)
	}
	c.hooks.Store(&hooks)
	c.count.Store(int64(len(names)))
}

// get returns the webhooks in order once the cache has been filled,
// waiting at most timeout for that. The slice is shared: callers only
// read it.
func (c *configCache) get(ctx context.Context, timeout time.Duration) ([]webhookSpec, error) {
	if err := c.synced.WaitTimeout(ctx, timeout); err != nil {
		return nil, fmt.Errorf("%w: %s not read from the store within %s: %v", ErrWebhooksNotReady, c.gr, timeout, err)
	}
	return *c.hooks.Load(), nil
}

func flattenMutating(obj runtime.Object) []webhookSpec {
	cfg := obj.(*admissionregistrationv1.MutatingWebhookConfiguration)
	return flattenHooks(cfg.Name, cfg.Webhooks, fromMutating)
}

func flattenValidating(obj runtime.Object) []webhookSpec {
	cfg := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	return flattenHooks(cfg.Name, cfg.Webhooks, fromValidating)
}

// flattenHooks converts the webhooks of the configuration named cfg, in
// order.
func flattenHooks[H any](cfg string, hooks []H, from func(string, *H) webhookSpec) []webhookSpec {
	out := make([]webhookSpec, 0, len(hooks))
	for i := range hooks {
		out = append(out, from(cfg, &hooks[i]))
	}
	return out
}

// Run keeps the webhook configurations cached from the store until ctx is
// done: a list, then a watch, relisting after a failure every
// WebhookConfig.RetryInterval. The API server runs it with its own
// controllers (apiserver.Server.RunControllers, through the admission
// chain apiserver/app builds); writes wait for its first list. Calling Run
// again after it returned starts over from a fresh list.
func (d *Webhooks) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, c := range []*configCache{d.mutating, d.validating} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			storewatch.Run(ctx, d.cfg.Store, storage.Prefix(c.gr), c, func() {
				c.synced.Done()
				d.cfg.Logger.Debug("webhook configurations cached", "resource", c.gr.String(), "configurations", c.count.Load())
			}, d.cfg.Logger, d.cfg.RetryInterval)
		}()
	}
	wg.Wait()
}

// WaitForSync waits until both configuration resources have been read
// from the store, or ctx is done.
func (d *Webhooks) WaitForSync(ctx context.Context) error {
	if err := d.mutating.synced.Wait(ctx); err != nil {
		return err
	}
	return d.validating.synced.Wait(ctx)
}
