package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/apiserver/defaults"
)

// DefaulterName names the Defaulter plugin.
const DefaulterName = "Defaulter"

// Defaulter applies Kubernetes' v1 defaults (package defaults) to the
// incoming object on create and update. Kubernetes defaults while decoding
// the request; podkit does it as the first mutating plugin, so every later
// plugin, the validation and the response see the defaulted object. On
// create it also applies the create-only defaults (defaults.OnCreate).
type Defaulter struct{}

var (
	_ Admitter = (*Defaulter)(nil)
	_ Handler  = (*Defaulter)(nil)
	_ Namer    = (*Defaulter)(nil)
)

// NewDefaulter returns the Defaulter plugin.
func NewDefaulter() *Defaulter { return &Defaulter{} }

// Name implements Namer.
func (*Defaulter) Name() string { return DefaulterName }

// Handles implements Handler: create and update.
func (*Defaulter) Handles(op Operation) bool { return op == Create || op == Update }

// Admit defaults a.Object in place, for subresource writes too (a status
// update carries the whole object, which Kubernetes defaults on decode).
// Objects of types the defaults package does not know (Binding, Scale,
// Eviction, ...) are left alone.
func (*Defaulter) Admit(_ context.Context, a *Attributes) error {
	if a.Object == nil {
		return nil
	}
	if a.Operation == Create && a.Subresource == "" {
		defaults.OnCreate(a.Object)
		return nil
	}
	// A service update that omits ipFamilyPolicy keeps the stored one, as
	// Kubernetes' IP allocator does, instead of falling back to SingleStack.
	if svc, ok := a.Object.(*corev1.Service); ok && svc.Spec.IPFamilyPolicy == nil {
		if old, ok := a.OldObject.(*corev1.Service); ok && old.Spec.IPFamilyPolicy != nil {
			policy := *old.Spec.IPFamilyPolicy
			svc.Spec.IPFamilyPolicy = &policy
		}
	}
	defaults.Default(a.Object)
	return nil
}
