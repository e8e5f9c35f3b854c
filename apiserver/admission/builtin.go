package admission

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Builtins are podkit's built-in admission plugins, all reading one store.
type Builtins struct {
	Defaulter                *Defaulter
	NamespaceLifecycle       *NamespaceLifecycle
	LimitRanger              *LimitRanger
	ServiceAccount           *ServiceAccount
	Priority                 *Priority
	DefaultTolerationSeconds *DefaultTolerationSeconds
	ResourceQuota            *ResourceQuota
}

// BuiltinsConfig configures NewBuiltins.
type BuiltinsConfig struct {
	// Store is the API server's storage. Required.
	Store QuotaStore
	// Clock and Logger are passed to the ResourceQuota plugin; optional.
	Clock  func() time.Time
	Logger *slog.Logger
	// MountServiceAccountToken is the ServiceAccount plugin's.
	MountServiceAccountToken bool
}

// NewBuiltins builds every built-in plugin with default settings.
func NewBuiltins(cfg BuiltinsConfig) (*Builtins, error) {
	if cfg.Store == nil {
		return nil, errors.New("admission: built-in plugins need a store")
	}
	b := &Builtins{Defaulter: NewDefaulter()}
	var err error
	if b.NamespaceLifecycle, err = NewNamespaceLifecycle(NamespaceLifecycleConfig{Namespaces: cfg.Store}); err != nil {
		return nil, err
	}
	if b.LimitRanger, err = NewLimitRanger(LimitRangerConfig{LimitRanges: cfg.Store}); err != nil {
		return nil, err
	}
	if b.ServiceAccount, err = NewServiceAccount(ServiceAccountConfig{ServiceAccounts: cfg.Store, MountServiceAccountToken: cfg.MountServiceAccountToken}); err != nil {
		return nil, err
	}
	if b.Priority, err = NewPriority(PriorityConfig{PriorityClasses: cfg.Store}); err != nil {
		return nil, err
	}
	if b.DefaultTolerationSeconds, err = NewDefaultTolerationSeconds(DefaultTolerationSecondsConfig{}); err != nil {
		return nil, err
	}
	if b.ResourceQuota, err = NewResourceQuota(ResourceQuotaConfig{Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	return b, nil
}

// Mutators returns the mutating plugins in the order Kubernetes runs them,
// preceded by the Defaulter (Kubernetes defaults while decoding).
func (b *Builtins) Mutators() []Admitter {
	return []Admitter{b.Defaulter, b.NamespaceLifecycle, b.LimitRanger, b.ServiceAccount, b.Priority, b.DefaultTolerationSeconds}
}

// Validators returns the validating plugins in Kubernetes' order;
// ResourceQuota is last.
func (b *Builtins) Validators() []Validator {
	return []Validator{b.LimitRanger, b.ServiceAccount, b.Priority, b.ResourceQuota}
}

// Chain returns a chain of the built-in plugins with the caller's mutators
// after the built-in ones (so they see defaulted objects, like webhooks do)
// and the caller's validators before ResourceQuota (so quota is charged
// only for objects every other plugin accepted).
func (b *Builtins) Chain(mutators []Admitter, validators []Validator, opts ...Option) (*Chain, error) {
	muts := append(b.Mutators(), mutators...)
	builtin := b.Validators()
	vals := append(append(builtin[:len(builtin)-1:len(builtin)-1], validators...), b.ResourceQuota)
	c, err := NewChain(muts, vals, opts...)
	if err != nil {
		return nil, fmt.Errorf("building admission chain: %w", err)
	}
	return c, nil
}
