package trace

import (
	"strings"
	"time"
)

// Annotation is the pod annotation holding the birth trace.
const Annotation = "podkit.io/birth-trace"

// Steps of the birth sequence, in order. The kubelet's steps between
// StepSeen and StepReady are ordered by time (images are pulled per
// container, after the sandbox).
const (
	StepAdmitted  = "admitted"  // the API server: mutating admission done
	StepStored    = "stored"    // the API server: the pod is written
	StepScheduled = "scheduled" // the scheduler chose a node
	StepBound     = "bound"     // the API server admitted the Binding
	StepSeen      = "seen"      // the kubelet's pod worker got the pod
	StepCgroups   = "cgroups"   // the pod cgroup exists in its QoS tier
	StepVolumes   = "volumes"   // volumes set up
	StepSandbox   = "sandbox"   // namespaces ready (network setup begins)
	StepNetwork   = "network"   // the pod has its IP (detail)
	StepImage     = "image"     // image:<container>, detail pulled or cached
	StepInit      = "init"      // init:<container> exited successfully
	StepContainer = "container" // container:<container> started
	StepReady     = "ready"     // the pod's Ready condition became True
)

// ContainerStep names a per-container step: kind is StepImage, StepInit or
// StepContainer.
func ContainerStep(kind, container string) string { return kind + ":" + container }

// Kind is a step's kind: the name without its container ("image:web" →
// "image"). It is the label of the step metrics.
func Kind(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		return name[:i]
	}
	return name
}

// Container is the container a per-container step names ("" for others).
func Container(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		return name[i+1:]
	}
	return ""
}

// Step is one completed step.
type Step struct {
	Name   string
	At     time.Time
	Detail string // e.g. the pod IP, "pulled" or "cached"
}

// Trace is a pod's birth trace: its steps in the order they were added.
type Trace struct {
	Steps []Step
}

// Add records a step unless one of the same name is already there (the
// first completion is the birth's).
func (t *Trace) Add(name string, at time.Time, detail string) {
	if t.Has(name) {
		return
	}
	t.Steps = append(t.Steps, Step{Name: name, At: at, Detail: detail})
}

// Has says the trace has a step of that name.
func (t *Trace) Has(name string) bool {
	_, ok := t.Get(name)
	return ok
}

// Get returns the step of that name.
func (t *Trace) Get(name string) (Step, bool) {
	for _, s := range t.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// Merge adds o's steps that t lacks.
func (t *Trace) Merge(o *Trace) {
	if o == nil {
		return
	}
	for _, s := range o.Steps {
		t.Add(s.Name, s.At, s.Detail)
	}
}

// FromPod decodes the trace in a pod's annotations; ok is false when there
// is none or it does not decode.
func FromAnnotations(annotations map[string]string) (*Trace, bool) {
	v, ok := annotations[Annotation]
	if !ok {
		return nil, false
	}
	t, err := Decode(v)
	if err != nil {
		return nil, false
	}
	return t, true
}

// WithStep returns annotations with the step added to their trace. It
// returns annotations itself when they carry no trace (tracing is off for
// that pod) or the step is already there, and otherwise a copy: the map
// passed in is never modified, so it may be a shared cache's.
func WithStep(annotations map[string]string, name string, at time.Time, detail string) map[string]string {
	v, ok := annotations[Annotation]
	if !ok {
		return annotations
	}
	nv, err := Append(v, name, at, detail)
	if err != nil || nv == v {
		return annotations
	}
	out := make(map[string]string, len(annotations))
	for k, val := range annotations {
		out[k] = val
	}
	out[Annotation] = nv
	return out
}
