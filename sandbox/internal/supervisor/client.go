package supervisor

import (
	"context"
	"errors"
	"sync"
	"syscall"
)

// Client talks to the supervisor of a runtime root. Its methods are safe
// for concurrent use. When the connection is lost (the supervisor died or
// exited), calls in flight fail with ErrClosed, Events channels close, and
// the next call connects again, starting a new supervisor when none runs
// (which reloads the tasks from disk). State, List, Wait and Delete are
// retried once on a fresh connection when the old one was lost under
// them; CreateTask and Signal are not (they may have taken effect).
type Client struct {
	root string
	o    options

	mu     sync.Mutex
	cur    *conn
	closed bool
}

// conn returns the live connection, making one when needed.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cur != nil && !c.cur.broken() {
		return c.cur, nil
	}
	if c.cur != nil {
		c.cur.close()
		c.cur = nil
	}
	cn, err := dialOrStart(ctx, c.root, c.o)
	if err != nil {
		return nil, err
	}
	c.cur = cn
	return cn, nil
}

func (c *Client) call(ctx context.Context, retry bool, method string, params, result any) error {
	cn, err := c.conn(ctx)
	if err != nil {
		return err
	}
	err = cn.call(ctx, method, params, result)
	if retry && errors.Is(err, ErrClosed) && ctx.Err() == nil {
		if cn, err = c.conn(ctx); err != nil {
			return err
		}
		err = cn.call(ctx, method, params, result)
	}
	return err
}

// Pid is the process id of the supervisor of the current connection (0
// when there is none).
func (c *Client) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return 0
	}
	return c.cur.pid
}

// Close disconnects for good. The supervisor keeps running while it has
// running tasks (and exits after its idle time when it has none).
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.cur != nil {
		c.cur.close()
		c.cur = nil
	}
	return nil
}

// CreateTask starts a task's process under the supervisor. It returns
// when the process exists (for KindNative, when the launcher returned; for
// KindExec, when the command exited 0 and the pid file was read).
func (c *Client) CreateTask(ctx context.Context, spec TaskSpec) (TaskState, error) {
	if err := spec.validate(); err != nil {
		return TaskState{}, err
	}
	var st TaskState
	err := c.call(ctx, false, mCreate, spec, &st)
	return st, err
}

// Signal sends sig to the task's process. ErrNotFound for an unknown task,
// ErrExited for one that has exited; neither for SIGKILL.
func (c *Client) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	return c.call(ctx, false, mSignal, signalParams{ID: id, Signal: int(sig)}, nil)
}

// State reports a task (ErrNotFound when unknown).
func (c *Client) State(ctx context.Context, id string) (TaskState, error) {
	var st TaskState
	err := c.call(ctx, true, mState, idParams{ID: id}, &st)
	return st, err
}

// List reports every task, sorted by ID.
func (c *Client) List(ctx context.Context) ([]TaskState, error) {
	var out []TaskState
	err := c.call(ctx, true, mList, nil, &out)
	return out, err
}

// Wait returns the task's state once it has exited.
func (c *Client) Wait(ctx context.Context, id string) (TaskState, error) {
	var st TaskState
	err := c.call(ctx, true, mWait, idParams{ID: id}, &st)
	return st, err
}

// DeleteOption changes Delete.
type DeleteOption func(*deleteParams)

// WithForce makes Delete kill a running task (SIGKILL) and wait for its
// exit instead of failing with ErrRunning.
func WithForce() DeleteOption { return func(p *deleteParams) { p.Force = true } }

// Delete forgets an exited task: closes its log, removes its records.
// A running task is ErrRunning unless WithForce. The log file stays.
func (c *Client) Delete(ctx context.Context, id string, opts ...DeleteOption) error {
	p := deleteParams{ID: id}
	for _, o := range opts {
		o(&p)
	}
	return c.call(ctx, true, mDelete, p, nil)
}
