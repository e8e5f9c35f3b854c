package validation

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalidOption is wrapped by New when an Option rejects its value.
var ErrInvalidOption = errors.New("invalid validation option")

// ScopeFunc reports whether objects of kind gk are namespaced. known is false
// when the function does not know gk.
type ScopeFunc func(gk schema.GroupKind) (namespaced, known bool)

// Option configures a Validator.
type Option func(*options) error

type options struct {
	nodePortBase, nodePortSize int
	allowPrivileged            bool
	strictIPs                  bool
	scope                      ScopeFunc
}

func defaultOptions() options {
	return options{nodePortBase: 30000, nodePortSize: 2768, allowPrivileged: true}
}

// WithNodePortRange sets the range Service nodePorts must fall in, base to
// base+size-1 inclusive, as kube-apiserver's --service-node-port-range does
// (default 30000-32767). A size of 0 disables the range check.
func WithNodePortRange(base, size int) Option {
	return func(o *options) error {
		if size < 0 || base < 1 || (size > 0 && base+size-1 > 65535) {
			return fmt.Errorf("node port range %d+%d: %w", base, size, ErrInvalidOption)
		}
		o.nodePortBase, o.nodePortSize = base, size
		return nil
	}
}

// WithAllowPrivileged sets whether privileged containers are allowed, like
// kube-apiserver's --allow-privileged. podkit defaults to true (as kubeadm
// clusters do); when false, privileged: true is Forbidden.
func WithAllowPrivileged(allow bool) Option {
	return func(o *options) error { o.allowPrivileged = allow; return nil }
}

// WithStrictIPValidation makes IP and CIDR fields that Kubernetes validates
// "legacy-style" (clusterIPs, podIPs, endpoints, podCIDRs, ...) reject
// non-canonical forms such as leading zeros, as the StrictIPCIDRValidation
// feature gate does. Values already present in the old object stay valid on
// update. Default false.
func WithStrictIPValidation(strict bool) Option {
	return func(o *options) error { o.strictIPs = strict; return nil }
}

// WithScope teaches the Validator the scope of kinds outside the built-in
// table (custom resources, aggregated APIs). It is consulted for objects of
// unknown Go type and for Event.involvedObject kinds.
func WithScope(fn ScopeFunc) Option {
	return func(o *options) error {
		if fn == nil {
			return fmt.Errorf("nil ScopeFunc: %w", ErrInvalidOption)
		}
		o.scope = fn
		return nil
	}
}

// Validator validates API objects as Kubernetes' pkg/apis/*/validation does.
// It holds no mutable state and is safe for concurrent use.
type Validator struct {
	opts  options
	kinds kindTable
}

// New returns a Validator configured by opts.
func New(opts ...Option) (*Validator, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("validation.New: %w", err)
		}
	}
	return &Validator{opts: o, kinds: newKindTable()}, nil
}

// Default returns a Validator with default options.
func Default() *Validator {
	return &Validator{opts: defaultOptions(), kinds: newKindTable()}
}

// GroupKind returns the API group and kind of obj: from the built-in table for
// the k8s.io/api types, otherwise from obj's TypeMeta. ok is false when
// neither knows.
func (v *Validator) GroupKind(obj runtime.Object) (schema.GroupKind, bool) {
	if obj == nil {
		return schema.GroupKind{}, false
	}
	if e, ok := v.kinds.byType[reflect.TypeOf(obj)]; ok {
		return e.gk, true
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return schema.GroupKind{}, false
	}
	return gvk.GroupKind(), true
}

// Namespaced reports whether kind gk is namespaced, from the built-in table and
// then the ScopeFunc given with WithScope. known is false when neither knows.
func (v *Validator) Namespaced(gk schema.GroupKind) (namespaced, known bool) {
	if ns, ok := v.kinds.byGK[gk]; ok {
		return ns, true
	}
	if v.opts.scope != nil {
		return v.opts.scope(gk)
	}
	return false, false
}

// ValidateCreate validates obj for creation using a default Validator.
func ValidateCreate(obj runtime.Object) field.ErrorList { return Default().ValidateCreate(obj) }

// ValidateUpdate validates the update of old to obj using a default Validator.
func ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return Default().ValidateUpdate(obj, old)
}

// ValidateStatusUpdate validates a status-subresource update of old to obj
// using a default Validator.
func ValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	return Default().ValidateStatusUpdate(obj, old)
}
