package oci

import (
	"context"
	"fmt"
	"maps"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
)

// Runner is a native runtime whose pods run their containers through one
// OCI runtime handler unless they name another: a node where runc (or
// crun) is the default runtime class. Every method but RunPodSandbox is
// the native runtime's.
type Runner struct {
	*native.Runtime
	handler string
}

var (
	_ sandbox.SandboxRunner = (*Runner)(nil)
	_ sandbox.Execer        = (*Runner)(nil)
	_ sandbox.EventSource   = (*Runner)(nil)
)

// NewRunner opens a native runtime (native.New) with h registered as the
// handler called name, next to cfg.Handlers (not modified), and makes it
// the default: a SandboxConfig with no RuntimeHandler gets name. Reopen a
// node's state by calling it again with the same arguments.
func NewRunner(ctx context.Context, cfg native.Config, name string, h native.Handler) (*Runner, error) {
	if name == "" || name == "native" {
		return nil, fmt.Errorf("oci: runner handler name %q is the native runtime's: %w", name, ErrInvalid)
	}
	if h == nil {
		return nil, fmt.Errorf("oci: runner handler %q is nil: %w", name, ErrInvalid)
	}
	handlers := maps.Clone(cfg.Handlers)
	if handlers == nil {
		handlers = map[string]native.Handler{}
	}
	handlers[name] = h
	cfg.Handlers = handlers
	rt, err := native.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Runner{Runtime: rt, handler: name}, nil
}

// Handler is the name of the default handler.
func (r *Runner) Handler() string { return r.handler }

// RunPodSandbox runs the sandbox with the default handler when cfg names
// none.
func (r *Runner) RunPodSandbox(ctx context.Context, cfg *sandbox.SandboxConfig) (*sandbox.Sandbox, error) {
	if cfg != nil && cfg.RuntimeHandler == "" {
		c := *cfg
		c.RuntimeHandler = r.handler
		cfg = &c
	}
	return r.Runtime.RunPodSandbox(ctx, cfg)
}
