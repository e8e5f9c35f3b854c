package kubelet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podkit/podkit/sandbox"
)

// The PLEG (pod lifecycle event generator) keeps the runtime cache current
// and wakes the workers of pods whose containers changed:
//
//   - with a runtime that is a sandbox.EventSource, each container event
//     refreshes that one container (one ContainerStatus call) at once;
//   - every RelistInterval one runtime List refreshes everything, which
//     catches what events miss (sandboxes, runtimes without events), and
//     finds pods only the runtime knows (orphans) to tear down.
//
// Nothing polls containers one by one in a loop.

// relist lists the runtime and wakes the workers of pods that changed.
func (k *Kubelet) relist(ctx context.Context) error {
	since := k.cache.generation()
	sbs, cs, err := k.runtime.List(ctx)
	if err != nil {
		return err
	}
	for uid := range k.cache.replace(since, sbs, cs) {
		k.workers.kick(uid)
	}
	k.lastRelist.Store(k.clock.Now().UnixNano())
	k.adoptOrphans()
	k.sweepMirrors(ctx)
	return nil
}

// adoptOrphans starts workers that tear down pods the runtime holds but no
// source knows, once the sources have told everything they know.
func (k *Kubelet) adoptOrphans() {
	if !k.sourcesReady() {
		return
	}
	for _, uid := range k.cache.uids() {
		if k.workers.get(uid) != nil {
			continue
		}
		rt := k.cache.get(uid)
		if len(rt.Sandboxes) == 0 && len(rt.Containers) == 0 {
			continue
		}
		k.log.Info("tearing down a pod no source knows", "podUID", uid)
		k.workers.orphan(podFromRuntime(uid, rt))
	}
}

// subscribe subscribes to the runtime's events, if it has them. Run does
// it before any worker starts, so no container event is missed.
func (k *Kubelet) subscribe(ctx context.Context) <-chan sandbox.ContainerEvent {
	es, ok := k.runtime.(sandbox.EventSource)
	if !ok {
		return nil
	}
	ch, err := es.Events(ctx)
	if err != nil {
		k.log.Warn("runtime events unavailable, relying on relists", "err", err)
		return nil
	}
	return ch
}

// runPLEG relists every RelistInterval and follows runtime events until
// ctx ends.
func (k *Kubelet) runPLEG(ctx context.Context, events <-chan sandbox.ContainerEvent) {
	ticker := k.clock.NewTicker(k.cfg.RelistInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			k.handleContainerEvent(ctx, ev)
		case <-ticker.C():
			if err := k.relist(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("relisting the runtime", "err", err)
			}
		}
	}
}

// handleContainerEvent refreshes the container an event is about and wakes
// its pod's worker.
func (k *Kubelet) handleContainerEvent(ctx context.Context, ev sandbox.ContainerEvent) {
	if ev.Type == sandbox.ContainerDeleted {
		if uid := k.cache.deleteContainer(ev.ContainerID); uid != "" {
			k.workers.kick(uid)
		}
		return
	}
	if k.cache.reflects(ev.ContainerID, ev.Type) {
		// The worker that created, started or stopped it read it
		// afterwards: the event is no news, and reading the container
		// again would find the same.
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := k.runtime.ContainerStatus(cctx, ev.ContainerID)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		if uid := k.cache.deleteContainer(ev.ContainerID); uid != "" {
			k.workers.kick(uid)
		}
		return
	case err != nil:
		k.log.Debug("container status after an event", "container", ev.ContainerID, "err", err)
		return
	}
	if uid := k.cache.putContainer(st); uid != "" {
		k.workers.kick(uid)
	}
}

// refreshContainer re-reads one container after the worker acted on it.
func (k *Kubelet) refreshContainer(ctx context.Context, id string) *sandbox.ContainerStatus {
	st, err := k.runtime.ContainerStatus(ctx, id)
	switch {
	case errors.Is(err, sandbox.ErrNotFound):
		k.cache.deleteContainer(id)
		return nil
	case err != nil:
		k.log.Debug("container status", "container", id, "err", err)
		return nil
	}
	k.cache.putContainer(st)
	return st
}

// RelistThreshold is how long the runtime may go unlisted before the
// kubelet reports itself unhealthy (Kubernetes' PLEG threshold).
const RelistThreshold = 3 * time.Minute

// ErrUnhealthy reports a kubelet that lost touch with its runtime.
var ErrUnhealthy = errors.New("kubelet unhealthy")

// Healthy reports an error wrapping ErrUnhealthy when the runtime has not
// been listed successfully for RelistThreshold ("PLEG is not healthy"), or
// not yet at all (for the kubelet's /healthz).
func (k *Kubelet) Healthy() error {
	last := k.lastRelist.Load()
	if last == 0 {
		return fmt.Errorf("%w: the runtime has not been listed yet", ErrUnhealthy)
	}
	if d := k.clock.Since(time.Unix(0, last)); d > RelistThreshold {
		return fmt.Errorf("%w: PLEG is not healthy: pleg was last seen active %v ago; threshold is %v", ErrUnhealthy, d, RelistThreshold)
	}
	return nil
}
