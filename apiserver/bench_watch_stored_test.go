package apiserver_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// storeClock wraps the benchmark's store and notes when each timed write
// (an object carrying sentAnnotation) reaches it: for a create when the
// store is called, for an update when the new object leaves tryUpdate,
// just before the store commits it. Subtracting that moment from a
// watcher's receive time gives the delivery latency as Kubernetes' watch
// latency SLI counts it — from the object being stored to the watcher —
// without the writer's own request (client encoding, HTTP, admission).
// It forwards SharedWriter so the server keeps its fast write path.
type storeClock struct {
	storage.Store
	mu     sync.Mutex
	stored map[int64]time.Time // send time (ns) → moment the store took the write
}

func newStoreClock(st storage.Store) *storeClock {
	return &storeClock{Store: st, stored: map[int64]time.Time{}}
}

func (c *storeClock) note(obj runtime.Object) {
	at := time.Now()
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	v, ok := m.GetAnnotations()[sentAnnotation]
	if !ok {
		return
	}
	sent, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.stored[sent] = at
	c.mu.Unlock()
}

func (c *storeClock) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	c.note(obj)
	return c.Store.Create(ctx, key, obj)
}

func (c *storeClock) Update(ctx context.Context, key string, tryUpdate func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return c.Store.Update(ctx, key, c.noting(tryUpdate))
}

func (c *storeClock) CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	c.note(obj)
	if sw, ok := c.Store.(storage.SharedWriter); ok {
		return sw.CreateShared(ctx, key, obj)
	}
	return c.Store.Create(ctx, key, obj)
}

func (c *storeClock) UpdateShared(ctx context.Context, key string, tryUpdate func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	if sw, ok := c.Store.(storage.SharedWriter); ok {
		return sw.UpdateShared(ctx, key, c.noting(tryUpdate))
	}
	return c.Store.Update(ctx, key, c.noting(tryUpdate))
}

func (c *storeClock) noting(tryUpdate func(runtime.Object) (runtime.Object, error)) func(runtime.Object) (runtime.Object, error) {
	return func(cur runtime.Object) (runtime.Object, error) {
		out, err := tryUpdate(cur)
		if err == nil {
			c.note(out)
		}
		return out, err
	}
}

// reportStored reports the p50 and p99, over every delivery, of the time
// from a write reaching the store to a watcher receiving it. samples[w][i]
// is watcher w's send → receive latency of write i, sent[i] its send time.
func (c *storeClock) reportStored(b *testing.B, samples [][]time.Duration, sent []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	offset := make([]time.Duration, len(sent)) // send → stored, per write
	for i, s := range sent {
		at, ok := c.stored[s]
		if !ok {
			b.Fatalf("write %d never reached the store", i)
		}
		offset[i] = at.Sub(time.Unix(0, s))
	}
	var d []time.Duration
	for _, got := range samples {
		for i, l := range got {
			d = append(d, l-offset[i])
		}
	}
	slices.Sort(d)
	ms := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / 1e6 }
	b.ReportMetric(ms(0.50), "stored-p50-ms")
	b.ReportMetric(ms(0.99), "stored-p99-ms")
}
