package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
)

// Operation is the kind of request being admitted.
type Operation string

// Operations, spelled as in admission.k8s.io/v1.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one request to admit.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	// Object is the incoming object (nil on Delete); an Admitter may mutate it.
	Object runtime.Object
	// OldObject is the stored object on Update and Delete.
	OldObject runtime.Object
	User      auth.User
	DryRun    bool
}

// Admitter is a mutating admission plugin.
type Admitter interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Validator is a validating admission plugin; it must not mutate a.Object.
type Validator interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Handler is optionally implemented by plugins that only care about some
// operations; the chain skips them for the others.
type Handler interface {
	Handles(op Operation) bool
}

// Namer is optionally implemented by plugins to name themselves in error
// messages, logs and metrics (the "name" label of
// apiserver_admission_controller_admission_duration_seconds). Unnamed
// plugins are called "mutating#<i>" or "validating#<i>" by their position.
type Namer interface {
	Name() string
}

// Finisher is optionally implemented by plugins that keep state between
// admitting a write and the write itself, like ResourceQuota, which counts
// an admitted object until storage holds it. The REST layer reports how
// each admitted write ended through Chain.Finish.
type Finisher interface {
	// Finish is told the outcome of the write a was admitted for: err is
	// nil when the object was stored.
	Finish(ctx context.Context, a *Attributes, err error)
}

// AdmitFunc adapts a function to Admitter.
type AdmitFunc func(ctx context.Context, a *Attributes) error

// Admit calls f.
func (f AdmitFunc) Admit(ctx context.Context, a *Attributes) error { return f(ctx, a) }

// ValidateFunc adapts a function to Validator.
type ValidateFunc func(ctx context.Context, a *Attributes) error

// Validate calls f.
func (f ValidateFunc) Validate(ctx context.Context, a *Attributes) error { return f(ctx, a) }
