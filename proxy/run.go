package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// Run programs the rules and keeps them in sync with Services and
// EndpointSlices until ctx ends, then removes the table entirely. Changes
// are synced as soon as possible but at most once per MinSyncPeriod, each
// sync rewriting only the chains of the Services that changed; every
// SyncPeriod a full resync rewrites everything. A failed sync is retried
// (as a full one) after a second. Run returns nil after a clean shutdown,
// ErrRunning if another Run is active, or the error that prevented the
// start or the removal of the table.
func (p *Proxier) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer p.running.Store(false)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	factory, own := p.cfg.Informers, false
	if factory == nil {
		factory, own = informers.NewSharedInformerFactory(p.cfg.Client, 0), true
	}
	svcInf := factory.Core().V1().Services().Informer()
	epsInf := factory.Discovery().V1().EndpointSlices().Informer()
	p.mu.Lock()
	p.resetViewLocked()
	p.informed = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.informed = false
		p.mu.Unlock()
	}()
	svcReg, err := svcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onService(obj, false) },
		UpdateFunc: func(_, obj any) { p.onService(obj, false) },
		DeleteFunc: func(obj any) { p.onService(obj, true) },
	})
	if err != nil {
		return fmt.Errorf("watch services: %w", err)
	}
	defer func() { _ = svcInf.RemoveEventHandler(svcReg) }()
	epsReg, err := epsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onSlice(nil, obj) },
		UpdateFunc: func(old, obj any) { p.onSlice(old, obj) },
		DeleteFunc: func(obj any) { p.onSlice(obj, nil) },
	})
	if err != nil {
		return fmt.Errorf("watch endpointslices: %w", err)
	}
	defer func() { _ = epsInf.RemoveEventHandler(epsReg) }()
	factory.Start(runCtx.Done())
	if own {
		defer factory.Shutdown()
		defer cancel() // Shutdown waits for the informers, which stop with runCtx
	}
	if !cache.WaitForCacheSync(runCtx.Done(), svcReg.HasSynced, epsReg.HasSynced) {
		return p.shutdown() // ctx ended before the caches filled
	}
	p.loop(runCtx)
	return p.shutdown()
}

// loop syncs on changes (rate-limited by MinSyncPeriod), on the resync
// period and on retries, until ctx ends.
func (p *Proxier) loop(ctx context.Context) {
	clk := p.cfg.Clock
	var last time.Time
	var pending, retry clock.Timer
	resync := clk.NewTimer(p.cfg.SyncPeriod)
	defer func() {
		for _, t := range []clock.Timer{pending, retry, resync} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	run := func(full bool) {
		last = clk.Now()
		if retry != nil {
			retry.Stop()
			retry = nil
		}
		if err := p.sync(ctx, full); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Error("syncing service rules; retrying", "error", err)
			retry = clk.NewTimer(min(retryPeriod, p.cfg.SyncPeriod))
		}
	}
	run(true)
	for {
		var pendingC, retryC <-chan time.Time
		if pending != nil {
			pendingC = pending.C()
		}
		if retry != nil {
			retryC = retry.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
			if pending != nil {
				continue // a sync is already scheduled
			}
			if wait := p.cfg.MinSyncPeriod - clk.Since(last); wait > 0 {
				pending = clk.NewTimer(wait)
				continue
			}
			run(false)
		case <-pendingC:
			pending = nil
			run(false)
		case <-retryC:
			retry = nil
			run(false)
		case <-resync.C():
			resync.Reset(p.cfg.SyncPeriod)
			run(true)
		}
	}
}

// shutdown removes the table and forgets what was programmed.
func (p *Proxier) shutdown() error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	c, err := p.connection(0, 0)
	if err == nil {
		err = c.deleteTable()
	}
	p.closeConn()
	p.applied = map[types.NamespacedName][]*servicePort{}
	p.ipRefs = map[netip.Addr]int{}
	p.staleChains, p.staleSets = map[string]struct{}{}, map[string]struct{}{}
	p.programmed = false
	if err != nil {
		return fmt.Errorf("remove table %s on shutdown: %w", p.cfg.Table, err)
	}
	p.log.Info("removed service rules")
	return nil
}

func (p *Proxier) onService(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	p.mu.Lock()
	if deleted {
		p.deleteServiceLocked(types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	} else {
		p.setServiceLocked(svc)
	}
	p.mu.Unlock()
	p.poke()
}

func (p *Proxier) onSlice(oldObj, obj any) {
	toSlice := func(o any) *discoveryv1.EndpointSlice {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		s, _ := o.(*discoveryv1.EndpointSlice)
		return s
	}
	old, cur := toSlice(oldObj), toSlice(obj)
	if old == nil && cur == nil {
		return
	}
	p.mu.Lock()
	p.setSliceLocked(old, cur)
	p.mu.Unlock()
	p.poke()
}
