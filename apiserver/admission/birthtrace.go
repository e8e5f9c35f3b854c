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
func (b *BirthTrace) Store(st storage.Store) storage.Store {
	return &birthTraceStore{Store: st, now: b.now}
}

type birthTraceStore struct {
	storage.Store
	now func() time.Time
}

func (s *birthTraceStore) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		pod.Annotations = trace.WithStep(pod.Annotations, trace.StepStored, s.now(), "")
	}
	return s.Store.Create(ctx, key, obj)
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
