package admission

import (
	"context"
	"sync"
)

// Recorder collects what admission plugins report besides their verdict:
// warnings, which the API server sends back as HTTP Warning headers (as
// kube-apiserver does for PodSecurity's warn mode and webhooks' warnings),
// and audit annotations, which an audit log records with the request.
type Recorder interface {
	AddWarning(msg string)
	AddAuditAnnotation(key, value string)
}

type recorderKey struct{}

// WithRecorder returns a context whose admission warnings and audit
// annotations go to r.
func WithRecorder(ctx context.Context, r Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// RecorderFrom returns the context's recorder, nil if none.
func RecorderFrom(ctx context.Context) Recorder {
	r, _ := ctx.Value(recorderKey{}).(Recorder)
	return r
}

// AddWarning reports a warning for the request's client; a no-op when the
// context has no recorder.
func AddWarning(ctx context.Context, msg string) {
	if r := RecorderFrom(ctx); r != nil && msg != "" {
		r.AddWarning(msg)
	}
}

// AddAuditAnnotation records an annotation for the request's audit event;
// a no-op when the context has no recorder.
func AddAuditAnnotation(ctx context.Context, key, value string) {
	if r := RecorderFrom(ctx); r != nil {
		r.AddAuditAnnotation(key, value)
	}
}

// RecorderFuncs adapts two functions to Recorder; a nil one drops its kind.
type RecorderFuncs struct {
	Warning    func(msg string)
	Annotation func(key, value string)
}

// AddWarning calls f.Warning.
func (f RecorderFuncs) AddWarning(msg string) {
	if f.Warning != nil {
		f.Warning(msg)
	}
}

// AddAuditAnnotation calls f.Annotation.
func (f RecorderFuncs) AddAuditAnnotation(key, value string) {
	if f.Annotation != nil {
		f.Annotation(key, value)
	}
}

// Annotations is a Recorder keeping audit annotations (and dropping
// warnings) for a caller that logs them afterwards.
type Annotations struct {
	mu sync.Mutex
	m  map[string]string
}

// AddWarning drops msg.
func (a *Annotations) AddWarning(string) {}

// AddAuditAnnotation keeps key=value; the first value of a key wins, as in
// Kubernetes' audit.
func (a *Annotations) AddAuditAnnotation(key, value string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]string{}
	}
	if _, ok := a.m[key]; !ok {
		a.m[key] = value
	}
}

// Map returns a copy of the annotations.
func (a *Annotations) Map() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.m))
	for k, v := range a.m {
		out[k] = v
	}
	return out
}
