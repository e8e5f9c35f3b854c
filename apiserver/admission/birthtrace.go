package admission

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/trace"
)

// BirthTrace is the API server's part of the pod birth trace (package
// trace): as a mutating plugin it starts a new pod's trace with
// trace.StepAdmitted and stamps trace.StepBound on pods/binding (the
// Binding's annotations are copied onto the pod); its Store wrapper stamps
// trace.StepStored just before the pod is written. It is opt-in (podkit's
// composition installs it with InstallBirthTrace); it changes nothing but
// the trace annotation, which it overwrites on create so a copied manifest
// starts a fresh trace.
type BirthTrace struct {
	now  func() time.Time
	pods ObjectGetter
}

var (
	_ Admitter = (*BirthTrace)(nil)
	_ Handler  = (*BirthTrace)(nil)
	_ Namer    = (*BirthTrace)(nil)
)

// NewBirthTrace returns the plugin. now defaults to time.Now; pods, when
// set, lets it stamp "bound" on Bindings that arrive without the trace
// (from a scheduler that does not forward it) by reading the pod's.
func NewBirthTrace(now func() time.Time, pods ObjectGetter) *BirthTrace {
	if now == nil {
		now = time.Now
	}
	return &BirthTrace{now: now, pods: pods}
}

// Name implements Namer.
func (b *BirthTrace) Name() string { return "PodBirthTrace" }

// Handles implements Handler: creates only (pods and pods/binding).
func (b *BirthTrace) Handles(op Operation) bool { return op == Create }

// Admit stamps the step of the request.
func (b *BirthTrace) Admit(ctx context.Context, a *Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" {
		return nil
	}
	switch o := a.Object.(type) {
	case *corev1.Pod:
		if a.Subresource != "" {
			return nil
		}
		t := &trace.Trace{}
		t.Add(trace.StepAdmitted, b.now(), "")
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[trace.Annotation] = trace.Encode(t)
	case *corev1.Binding:
		if a.Subresource != "binding" {
			return nil
		}
		if _, ok := o.Annotations[trace.Annotation]; !ok && b.pods != nil {
			v, ok := b.storedTrace(ctx, a.Namespace, a.Name)
			if !ok {
				return nil
			}
			o.Annotations = copyWith(o.Annotations, trace.Annotation, v)
		}
		o.Annotations = trace.WithStep(o.Annotations, trace.StepBound, b.now(), "")
	}
	return nil
}

// storedTrace reads the pod's trace from storage.
func (b *BirthTrace) storedTrace(ctx context.Context, namespace, name string) (string, bool) {
	obj, err := getShared(ctx, b.pods, storage.Key(podsGR, namespace, name))
	if err != nil {
		return "", false
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return "", false
	}
	v, ok := pod.Annotations[trace.Annotation]
	return v, ok
}

func copyWith(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}

// Store wraps st so that a traced pod gets trace.StepStored just before it
// is written; everything else passes through.
//
// The wrapper keeps st's fast paths: it implements storage.SharedWriter,
// storage.SharedReader and storage.OwningWriter exactly when st does, so
// the API server, which looks for them with type assertions, still finds
// them (and does not take the copying path because of the trace). A Go type
// either has a method or not, so each of the three is a small forwarding
// part (traceSharedWriter, traceSharedReader, traceOwningWriter) and Store
// returns the plain wrapper with just the parts st implements embedded.
//
// Every create, whichever method it comes through (Create, CreateShared,
// CreateOwned), stamps the pod the same way and before it is handed to st:
// the stamp replaces the pod's annotation map with a new one (trace.WithStep
// copies it), so a map the pod shares with another object is never
// written, and nothing is touched once st has the pod or on what st
// returns (shared objects stay read-only). Updates, in every form, and
// reads pass through unchanged: the trace is only stamped on create.
func (b *BirthTrace) Store(st storage.Store) storage.Store {
	base := &birthTraceStore{Store: st, now: b.now}
	sw, isSW := st.(storage.SharedWriter)
	sr, isSR := st.(storage.SharedReader)
	ow, isOW := st.(storage.OwningWriter)
	w := traceSharedWriter{s: base, sw: sw}
	r := traceSharedReader{sr: sr}
	o := traceOwningWriter{s: base, ow: ow}
	switch {
	case isSW && isSR && isOW: // the memory and bolt stores
		return &struct {
			*birthTraceStore
			traceSharedWriter
			traceSharedReader
			traceOwningWriter
		}{base, w, r, o}
	case isSW && isSR:
		return &struct {
			*birthTraceStore
			traceSharedWriter
			traceSharedReader
		}{base, w, r}
	case isSW && isOW:
		return &struct {
			*birthTraceStore
			traceSharedWriter
			traceOwningWriter
		}{base, w, o}
	case isSR && isOW:
		return &struct {
			*birthTraceStore
			traceSharedReader
			traceOwningWriter
		}{base, r, o}
	case isSW:
		return &struct {
			*birthTraceStore
			traceSharedWriter
		}{base, w}
	case isSR:
		return &struct {
			*birthTraceStore
			traceSharedReader
		}{base, r}
	case isOW:
		return &struct {
			*birthTraceStore
			traceOwningWriter
		}{base, o}
	}
	return base
}

// birthTraceStore is the plain wrapper: storage.Store with Create stamping.
type birthTraceStore struct {
	storage.Store
	now func() time.Time
}

// stamp adds trace.StepStored to a traced pod, replacing its annotation map
// rather than writing to it.
func (s *birthTraceStore) stamp(obj runtime.Object) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Annotations = trace.WithStep(pod.Annotations, trace.StepStored, s.now(), "")
	}
}

func (s *birthTraceStore) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	s.stamp(obj)
	return s.Store.Create(ctx, key, obj)
}

// traceSharedWriter forwards storage.SharedWriter, stamping creates.
type traceSharedWriter struct {
	s  *birthTraceStore
	sw storage.SharedWriter
}

func (w traceSharedWriter) CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	w.s.stamp(obj)
	return w.sw.CreateShared(ctx, key, obj)
}

func (w traceSharedWriter) UpdateShared(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return w.sw.UpdateShared(ctx, key, tryUpdate)
}

// traceSharedReader forwards storage.SharedReader.
type traceSharedReader struct {
	sr storage.SharedReader
}

func (r traceSharedReader) GetShared(ctx context.Context, key string) (runtime.Object, error) {
	return r.sr.GetShared(ctx, key)
}

// traceOwningWriter forwards storage.OwningWriter, stamping creates. obj is
// handed over to the wrapper and stamped before it is handed on to the
// store, which the ownership rules allow (it is not visible yet); tryUpdate
// reaches the store untouched, so it keeps its rules.
type traceOwningWriter struct {
	s  *birthTraceStore
	ow storage.OwningWriter
}

func (o traceOwningWriter) CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	o.s.stamp(obj)
	return o.ow.CreateOwned(ctx, key, obj)
}

func (o traceOwningWriter) UpdateOwned(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return o.ow.UpdateOwned(ctx, key, tryUpdate)
}

// AdmissionChain is what InstallBirthTrace extends: the API server's
// admission (apiserver.Admission), nil for none.
type AdmissionChain interface {
	Admitter
	Validator
}

// InstallBirthTrace returns the admission chain and store an API server
// runs with the birth trace on: chain's mutating plugins, then BirthTrace
// (so "admitted" is stamped once every other plugin has mutated the pod);
// chain's validating plugins unchanged; and st wrapped by Store. chain's
// Finisher, if any, still hears every outcome once.
func InstallBirthTrace(b *BirthTrace, chain AdmissionChain, st storage.Store) (*Chain, storage.Store, error) {
	if b == nil || st == nil {
		return nil, nil, errors.New("admission: InstallBirthTrace needs the plugin and the store")
	}
	muts := []Admitter{b}
	var vals []Validator
	if chain != nil {
		muts = []Admitter{chain, b}
		vals = []Validator{chain}
	}
	c, err := NewChain(muts, vals)
	if err != nil {
		return nil, nil, err
	}
	return c, b.Store(st), nil
}
