package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Chain runs admission plugins in order: Admit runs every mutating plugin,
// Validate every validating plugin. The REST layer calls chain.Admit, then
// the object's own validation, then chain.Validate, and persists the object
// only if all three succeed.
//
// Plugins that implement Handler are skipped for operations they do not
// handle. The first error stops the run. Kubernetes API errors
// (k8s.io/apimachinery/pkg/api/errors) pass through unchanged; any other
// error becomes a *PluginError: 403 Forbidden
// (`pods "x" is forbidden: admission plugin "y" denied the request: ...`),
// or 500 when the plugin's context was cancelled or the plugin panicked.
//
// A Chain is itself an Admitter and a Validator, so chains nest.
type Chain struct {
	mutators   []Admitter
	validators []Validator
	opts       chainOptions
	// admit and validate are the plugins' steps, built once: a request
	// only reads them.
	admit, validate []step
}

var (
	_ Admitter  = (*Chain)(nil)
	_ Validator = (*Chain)(nil)
	_ Finisher  = (*Chain)(nil)
)

type chainOptions struct {
	logger  *slog.Logger
	metrics *Metrics
	now     func() time.Time
}

// Option configures a Chain.
type Option func(*chainOptions) error

// WithLogger logs rejections at debug level and panics at error level.
func WithLogger(l *slog.Logger) Option {
	return func(o *chainOptions) error {
		if l == nil {
			return errors.New("admission: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithMetrics records plugin and step latencies in m.
func WithMetrics(m *Metrics) Option {
	return func(o *chainOptions) error {
		if m == nil {
			return errors.New("admission: nil metrics")
		}
		o.metrics = m
		return nil
	}
}

// WithClock replaces time.Now for latency measurements.
func WithClock(now func() time.Time) Option {
	return func(o *chainOptions) error {
		if now == nil {
			return errors.New("admission: nil clock")
		}
		o.now = now
		return nil
	}
}

// NewChain builds a chain running mutators (in order) on Admit and
// validators (in order) on Validate. Nil plugins are rejected.
func NewChain(mutators []Admitter, validators []Validator, opts ...Option) (*Chain, error) {
	c := &Chain{
		mutators:   append([]Admitter(nil), mutators...),
		validators: append([]Validator(nil), validators...),
		opts:       chainOptions{logger: slog.New(slog.DiscardHandler), now: time.Now},
	}
	for i, m := range c.mutators {
		if m == nil {
			return nil, fmt.Errorf("admission: mutating plugin %d is nil", i)
		}
	}
	for i, v := range c.validators {
		if v == nil {
			return nil, fmt.Errorf("admission: validating plugin %d is nil", i)
		}
	}
	for _, opt := range opts {
		if err := opt(&c.opts); err != nil {
			return nil, err
		}
	}
	c.admit = make([]step, len(c.mutators))
	for i, m := range c.mutators {
		c.admit[i] = step{plugin: m, name: pluginName(m, "mutating", i), run: m.Admit}
	}
	c.validate = make([]step, len(c.validators))
	for i, v := range c.validators {
		c.validate[i] = step{plugin: v, name: pluginName(v, "validating", i), run: v.Validate}
	}
	return c, nil
}

// Admit runs every mutating plugin that handles a.Operation; they may change
// a.Object.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	return c.run(ctx, a, "admit", c.admit)
}

// Validate runs every validating plugin that handles a.Operation.
func (c *Chain) Validate(ctx context.Context, a *Attributes) error {
	return c.run(ctx, a, "validate", c.validate)
}

// Finish tells every plugin implementing Finisher how the write a was
// admitted for ended (err nil: stored). The REST layer calls it after the
// write of every request that passed Validate, dry runs included.
// Plugins without it fall back on their own expiry.
func (c *Chain) Finish(ctx context.Context, a *Attributes, err error) {
	if a == nil {
		return
	}
	seen := map[Finisher]bool{}
	visit := func(p any) {
		f, ok := p.(Finisher)
		if !ok {
			return
		}
		// A plugin listed as mutator and validator hears the outcome once.
		if reflect.TypeOf(f).Comparable() {
			if seen[f] {
				return
			}
			seen[f] = true
		}
		f.Finish(ctx, a, err)
	}
	for _, m := range c.mutators {
		visit(m)
	}
	for _, v := range c.validators {
		visit(v)
	}
}

type step struct {
	plugin any
	name   string
	run    func(context.Context, *Attributes) error
}

func (c *Chain) run(ctx context.Context, a *Attributes, typ string, steps []step) error {
	if a == nil {
		return apierrors.NewInternalError(errors.New("admission: nil attributes"))
	}
	start := c.start()
	var err error
	for _, s := range steps {
		if h, ok := s.plugin.(Handler); ok && !h.Handles(a.Operation) {
			continue
		}
		if err = c.runOne(ctx, a, typ, s); err != nil {
			break
		}
	}
	if c.opts.metrics != nil {
		c.opts.metrics.observeStep(typ, a.Operation, err != nil, c.opts.now().Sub(start))
	}
	return err
}

// start is the time a step or plugin starts, read only when it is
// measured.
func (c *Chain) start() time.Time {
	if c.opts.metrics == nil {
		return time.Time{}
	}
	return c.opts.now()
}

func (c *Chain) runOne(ctx context.Context, a *Attributes, typ string, s step) (err error) {
	start := c.start()
	defer func() {
		if r := recover(); r != nil {
			c.opts.logger.Error("admission plugin panicked", "plugin", s.name, "type", typ, "panic", r)
			err = &PluginError{
				Plugin: s.name,
				Err:    fmt.Errorf("%w: %v", ErrPluginPanic, r),
				status: apierrors.NewInternalError(fmt.Errorf("admission plugin %q panicked: %v", s.name, r)),
			}
		}
		if err != nil {
			c.opts.logger.Debug("admission rejected request", "plugin", s.name, "type", typ,
				"operation", a.Operation, "resource", a.Resource.String(), "namespace", a.Namespace,
				"name", objectName(a), "err", err)
		}
		if c.opts.metrics != nil {
			c.opts.metrics.observePlugin(s.name, typ, a.Operation, err != nil, c.opts.now().Sub(start))
		}
	}()
	if err := ctx.Err(); err != nil {
		return wrapPluginError(s.name, a, err)
	}
	if err := s.run(ctx, a); err != nil {
		return wrapPluginError(s.name, a, err)
	}
	return nil
}

// wrapPluginError turns a plugin's error into the error the client sees.
func wrapPluginError(name string, a *Attributes, err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	var se *apierrors.StatusError
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		se = apierrors.NewInternalError(fmt.Errorf("admission plugin %q failed: %w", name, err))
	} else {
		se = apierrors.NewForbidden(a.Resource.GroupResource(), objectName(a),
			fmt.Errorf("admission plugin %q denied the request: %w", name, err))
	}
	return &PluginError{Plugin: name, Err: err, status: se}
}

func pluginName(p any, kind string, i int) string {
	if n, ok := p.(Namer); ok && n.Name() != "" {
		return n.Name()
	}
	return fmt.Sprintf("%s#%d", kind, i)
}
