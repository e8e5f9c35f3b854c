package fieldmanager

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/internal/semantic"
)

// Manager performs server-side apply and records the field ownership of
// every write in metadata.managedFields. It is safe for concurrent use; one
// Manager serves every resource of its scheme.
type Manager struct {
	scheme    *runtime.Scheme
	tc        *typeConverter
	now       func() time.Time
	log       *slog.Logger
	defaulter runtime.ObjectDefaulter
	reset     ResetFieldsFunc

	mu       sync.RWMutex
	managers map[managerKey]*managedfields.FieldManager

	plans      kindPlans
	fields     *structPlans
	slowCreate bool // tests: record creates through the library only
	slowUpdate bool // tests: record updates through the library only

	same semantic.Comparer // no-op checks of updates
}

type managerKey struct {
	gvk         schema.GroupVersionKind
	subresource string
}

type options struct {
	now       func() time.Time
	log       *slog.Logger
	defaulter runtime.ObjectDefaulter
	reset     ResetFieldsFunc
	warm      []schema.GroupVersionKind
}

// Option configures a Manager.
type Option func(*options) error

// WithClock sets the clock that timestamps managedFields entries (default
// time.Now). Times are stored in UTC, truncated to the second as the API
// serializes them.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("fieldmanager: nil clock")
		}
		o.now = now
		return nil
	}
}

// WithLogger sets the logger for the (rare) failures an Update survives
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("fieldmanager: nil logger")
		}
		o.log = l
		return nil
	}
}

// WithDefaulter sets the defaulting applied to the result of an apply, as
// kube-apiserver defaults every object it decodes. The default is podkit's
// defaults.Default, the same defaulting the REST layer applies to request
// bodies.
func WithDefaulter(d func(runtime.Object)) Option {
	return func(o *options) error {
		if d == nil {
			return errors.New("fieldmanager: nil defaulter")
		}
		o.defaulter = defaulterFunc(d)
		return nil
	}
}

// WithResetFields replaces DefaultResetFields.
func WithResetFields(f ResetFieldsFunc) Option {
	return func(o *options) error {
		if f == nil {
			return errors.New("fieldmanager: nil reset fields func")
		}
		o.reset = f
		return nil
	}
}

// WithKinds makes New build the field managers of these kinds (main
// resource and status) up front, failing with ErrUnknownKind if one has no
// schema. Without it they are built on first use.
func WithKinds(gvks ...schema.GroupVersionKind) Option {
	return func(o *options) error {
		o.warm = append(o.warm, gvks...)
		return nil
	}
}

type defaulterFunc func(runtime.Object)

func (f defaulterFunc) Default(obj runtime.Object) { f(obj) }

// New returns a Manager for the Go types registered in scheme (typically
// podkit's scheme.New()). It loads the merge schema once per process
// (client-go parses it on first use: roughly 100 ms, shared with the
// OpenAPI documents); later calls take microseconds.
func New(scheme *runtime.Scheme, opts ...Option) (*Manager, error) {
	if scheme == nil {
		return nil, errors.New("fieldmanager: nil scheme")
	}
	o := options{
		now:       time.Now,
		log:       slog.Default(),
		defaulter: defaulterFunc(func(obj runtime.Object) { defaults.Default(obj) }),
		reset:     DefaultResetFields(scheme),
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	parser, err := loadParser()
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: %w", err)
	}
	m := &Manager{
		scheme:    scheme,
		tc:        &typeConverter{scheme: scheme, parser: parser},
		now:       o.now,
		log:       o.log,
		defaulter: o.defaulter,
		reset:     o.reset,
		managers:  map[managerKey]*managedfields.FieldManager{},
		fields:    &structPlans{schema: &parser.Schema},
	}
	for _, gvk := range o.warm {
		for _, sub := range []string{"", "status"} {
			if _, err := m.fieldManager(gvk, sub); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// fieldManager returns the cached field manager of gvk through subresource.
func (m *Manager) fieldManager(gvk schema.GroupVersionKind, subresource string) (*managedfields.FieldManager, error) {
	k := managerKey{gvk: gvk, subresource: subresource}
	m.mu.RLock()
	fm := m.managers[k]
	m.mu.RUnlock()
	if fm != nil {
		return fm, nil
	}
	if _, err := m.tc.typeFor(gvk); err != nil {
		return nil, fmt.Errorf("fieldmanager: %w", err)
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if set := m.reset(gvk, subresource); set != nil && !set.Empty() {
		reset = map[fieldpath.APIVersion]fieldpath.Filter{
			fieldpath.APIVersion(gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(set),
		}
	}
	// podkit has no internal version: the served version is its own hub.
	fm, err := managedfields.NewDefaultFieldManager(m.tc, m.scheme, m.defaulter, m.scheme,
		gvk, gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: %v: %w", gvk, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.managers[k]; cur != nil {
		return cur, nil
	}
	m.managers[k] = fm
	return fm, nil
}
