package apiserver

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// In Kubernetes, core/v1 and events.k8s.io/v1 Events are two versions of
// one resource: an event kube-scheduler writes through events.k8s.io is
// what `kubectl describe` lists through core/v1. podkit keeps them in one
// place too: events.k8s.io/v1 is served from the core events' storage,
// converted field by field on the way in and out.

// eventsToCore converts an events.k8s.io/v1 Event to core/v1.
func eventsToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// coreToEvents converts a core/v1 Event to events.k8s.io/v1.
func coreToEvents(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Related != nil {
		r := *in.Related
		out.Related = &r
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// eventsStore serves events.k8s.io/v1 keys from the core events' storage.
type eventsStore struct {
	inner              storage.Store
	fromPrefix, prefix string
}

var _ storage.Store = (*eventsStore)(nil)

func newEventsStore(inner storage.Store) *eventsStore {
	return &eventsStore{
		inner:      inner,
		fromPrefix: storage.Prefix(schema.GroupResource{Group: eventsv1.GroupName, Resource: "events"}),
		prefix:     storage.Prefix(schema.GroupResource{Resource: "events"}),
	}
}

func (e *eventsStore) key(k string) string {
	if !strings.HasPrefix(k, e.fromPrefix) {
		return k
	}
	return e.prefix + strings.TrimPrefix(k, e.fromPrefix)
}

func toCore(obj runtime.Object) (runtime.Object, error) {
	switch o := obj.(type) {
	case *eventsv1.Event:
		return eventsToCore(o), nil
	case *corev1.Event:
		return o, nil
	}
	return nil, fmt.Errorf("events store: unexpected %T", obj)
}

func fromCore(obj runtime.Object) runtime.Object {
	if ev, ok := obj.(*corev1.Event); ok {
		return coreToEvents(ev)
	}
	return obj
}

func (e *eventsStore) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	in, err := toCore(obj)
	if err != nil {
		return nil, err
	}
	out, err := e.inner.Create(ctx, e.key(key), in)
	if err != nil {
		return nil, err
	}
	return fromCore(out), nil
}

func (e *eventsStore) Get(ctx context.Context, key string) (runtime.Object, error) {
	out, err := e.inner.Get(ctx, e.key(key))
	if err != nil {
		return nil, err
	}
	return fromCore(out), nil
}

func (e *eventsStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	opts.Predicate = convertedPredicate(opts.Predicate)
	opts.ReadOnly = false
	res, err := e.inner.List(ctx, e.key(prefix), opts)
	if err != nil {
		return nil, err
	}
	for i, item := range res.Items {
		res.Items[i] = fromCore(item)
	}
	return res, nil
}

func (e *eventsStore) Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	out, err := e.inner.Update(ctx, e.key(key), func(cur runtime.Object) (runtime.Object, error) {
		next, err := tryUpdate(fromCore(cur))
		if err != nil {
			return nil, err
		}
		return toCore(next)
	})
	if err != nil {
		return nil, err
	}
	return fromCore(out), nil
}

func (e *eventsStore) Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error) {
	var pre func(runtime.Object) error
	if precondition != nil {
		pre = func(cur runtime.Object) error { return precondition(fromCore(cur)) }
	}
	out, err := e.inner.Delete(ctx, e.key(key), pre)
	if err != nil {
		return nil, err
	}
	return fromCore(out), nil
}

func (e *eventsStore) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	opts.Predicate = convertedPredicate(opts.Predicate)
	w, err := e.inner.Watch(ctx, e.key(prefix), opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type != watch.Error {
			ev.Object = fromCore(ev.Object)
		}
		return ev, true
	}), nil
}

func (e *eventsStore) CurrentRevision(ctx context.Context) (uint64, error) {
	return e.inner.CurrentRevision(ctx)
}

// Close does nothing: the inner store belongs to the server.
func (e *eventsStore) Close() error { return nil }

// convertedPredicate evaluates a predicate written for events.k8s.io
// objects on stored core objects.
func convertedPredicate(p storage.Predicate) storage.Predicate {
	if p == nil {
		return nil
	}
	return func(obj runtime.Object) bool { return p(fromCore(obj)) }
}
