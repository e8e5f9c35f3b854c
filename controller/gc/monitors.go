package gc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// monitor feeds one resource's informer events into the graph.
type monitor struct {
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
	informer cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	stop     chan struct{} // closes an informer of our own; nil for shared ones
}

// deletableResources discovers the resources that can be listed, watched
// and deleted (preferred versions), minus the ignored ones. A partial
// discovery failure returns what was found and the error.
func (gc *GarbageCollector) deletableResources() (map[schema.GroupVersionResource]schema.GroupVersionKind, error) {
	lists, err := discovery.ServerPreferredResources(gc.discovery)
	var derr error
	if err != nil {
		derr = fmt.Errorf("discovering resources: %w", err)
		var gerr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gerr) && len(lists) == 0 {
			return nil, derr
		}
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists)
	out := map[schema.GroupVersionResource]schema.GroupVersionKind{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			derr = errors.Join(derr, fmt.Errorf("parsing group version %q: %w", l.GroupVersion, err))
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if gc.opts.ignored[gvr.GroupResource()] {
				continue
			}
			out[gvr] = gv.WithKind(r.Kind)
		}
	}
	return out, derr
}

// syncMonitors starts monitors for newly discovered resources and stops
// those of resources no longer served.
func (gc *GarbageCollector) syncMonitors(ctx context.Context) error {
	resources, derr := gc.deletableResources()
	if resources == nil {
		return derr
	}
	gc.monitorsMu.Lock()
	defer gc.monitorsMu.Unlock()
	var errs []error
	startShared := false
	for gvr, gvk := range resources {
		if _, ok := gc.monitors[gvr]; ok {
			continue
		}
		m, shared, err := gc.newMonitor(gvr, gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gc.monitors[gvr] = m
		startShared = startShared || shared
		if !shared {
			go m.informer.Run(m.stop)
		}
		gc.log.Debug("monitoring resource", "resource", gvr, "shared", shared)
	}
	// Resources gone from discovery are only dropped when discovery
	// succeeded: a failing group must not lose its monitors.
	if derr == nil {
		for gvr, m := range gc.monitors {
			if _, ok := resources[gvr]; !ok {
				gc.stopMonitor(m)
				delete(gc.monitors, gvr)
			}
		}
	}
	if startShared {
		gc.informers.Start(ctx.Done())
	}
	return errors.Join(append(errs, derr)...)
}

// newMonitor watches gvr through the shared typed informer when the
// factory knows the resource (one watch shared with the other
// controllers, as Kubernetes does), else through a metadata informer.
func (gc *GarbageCollector) newMonitor(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, bool, error) {
	m := &monitor{gvr: gvr, gvk: gvk}
	shared := false
	if !gc.opts.metadataOnly {
		if gi, err := gc.informers.ForResource(gvr); err == nil {
			m.informer, shared = gi.Informer(), true
		}
	}
	if m.informer == nil {
		m.informer = metadatainformer.NewFilteredMetadataInformer(gc.metadata, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
		m.stop = make(chan struct{})
	}
	reg, err := m.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { gc.observe(addEvent, nil, obj, gvk) },
		UpdateFunc: func(old, cur any) { gc.observe(updateEvent, old, cur, gvk) },
		DeleteFunc: func(obj any) { gc.observe(deleteEvent, nil, obj, gvk) },
	})
	if err != nil {
		return nil, false, fmt.Errorf("monitoring %s: %w", gvr, err)
	}
	m.reg = reg
	return m, shared, nil
}

// observe queues an informer notification for the graph builder.
func (gc *GarbageCollector) observe(typ eventType, old, cur any, gvk schema.GroupVersionKind) {
	if t, ok := cur.(cache.DeletedFinalStateUnknown); ok {
		cur = t.Obj
	}
	obj, err := meta.Accessor(cur)
	if err != nil {
		return
	}
	ev := &event{typ: typ, obj: obj, gvk: gvk}
	if old != nil {
		if o, err := meta.Accessor(old); err == nil {
			ev.oldObj = o
		}
	}
	gc.enqueued.Add(1)
	gc.changes.Add(ev)
}

func (gc *GarbageCollector) stopMonitor(m *monitor) {
	if err := m.informer.RemoveEventHandler(m.reg); err != nil {
		gc.log.Debug("removing monitor handler", "resource", m.gvr, "err", err)
	}
	if m.stop != nil {
		close(m.stop)
	}
}

func (gc *GarbageCollector) stopMonitors() {
	gc.monitorsMu.Lock()
	defer gc.monitorsMu.Unlock()
	for gvr, m := range gc.monitors {
		gc.stopMonitor(m)
		delete(gc.monitors, gvr)
	}
}

// monitorsSynced reports whether every monitor's handler received its
// informer's initial list.
func (gc *GarbageCollector) monitorsSynced() bool {
	gc.monitorsMu.Lock()
	defer gc.monitorsMu.Unlock()
	for _, m := range gc.monitors {
		if !m.reg.HasSynced() {
			return false
		}
	}
	return len(gc.monitors) > 0
}

func (gc *GarbageCollector) monitorCount() int {
	gc.monitorsMu.Lock()
	defer gc.monitorsMu.Unlock()
	return len(gc.monitors)
}

// Resources returns the resources being monitored, sorted (for tests and
// diagnostics).
func (gc *GarbageCollector) Resources() []schema.GroupVersionResource {
	gc.monitorsMu.Lock()
	defer gc.monitorsMu.Unlock()
	out := make([]schema.GroupVersionResource, 0, len(gc.monitors))
	for gvr := range gc.monitors {
		out = append(out, gvr)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int {
		return slices.Compare([]string{a.Group, a.Version, a.Resource}, []string{b.Group, b.Version, b.Resource})
	})
	return out
}
