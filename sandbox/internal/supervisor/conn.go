package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"sync"
)

// conn is one connection to a supervisor: requests multiplexed by id,
// answers dispatched by a read loop. Once lost it stays lost; Client makes
// a new one.
type conn struct {
	log *slog.Logger
	nc  net.Conn
	pid int

	wmu sync.Mutex
	enc *json.Encoder

	mu      sync.Mutex
	next    uint64
	pending map[uint64]func(frame)
	err     error // why the connection ended
	done    chan struct{}
	readEnd chan struct{}
}

func newConn(nc net.Conn, log *slog.Logger) *conn {
	c := &conn{log: log, nc: nc, enc: json.NewEncoder(nc), pending: map[uint64]func(frame){},
		done: make(chan struct{}), readEnd: make(chan struct{})}
	go c.read()
	return c
}

// read dispatches answers to their calls until the connection ends.
func (c *conn) read() {
	defer close(c.readEnd)
	dec := json.NewDecoder(bufio.NewReader(c.nc))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			c.mu.Lock()
			ours := c.err != nil // closed by close()
			c.mu.Unlock()
			if !ours {
				c.log.Warn("supervisor connection lost", "err", err)
			}
			c.fail(fmt.Errorf("%w: %v", ErrClosed, err))
			return
		}
		c.mu.Lock()
		h := c.pending[f.ID]
		if !f.More {
			delete(c.pending, f.ID)
		}
		c.mu.Unlock()
		if h != nil {
			h(f)
		}
	}
}

func (c *conn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
		c.nc.Close()
	}
}

// broken reports a lost connection.
func (c *conn) broken() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) close() {
	c.fail(ErrClosed)
	<-c.readEnd
}

// start sends a request whose answers go to h; it returns the request id.
func (c *conn) start(method string, params any, h func(frame)) (uint64, error) {
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", method, err)
		}
		raw = b
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, err
	}
	c.next++
	id := c.next
	c.pending[id] = h
	c.mu.Unlock()
	if err := c.send(frame{ID: id, Method: method, Params: raw}); err != nil {
		c.forget(id)
		return 0, err
	}
	return id, nil
}

func (c *conn) send(f frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.enc.Encode(f); err != nil {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
		c.fail(err)
		return err
	}
	return nil
}

// forget drops a call and tells the supervisor to stop working on it.
func (c *conn) forget(id uint64) {
	c.mu.Lock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	closed := c.err != nil
	c.mu.Unlock()
	if ok && !closed {
		c.send(frame{ID: id, Cancel: true})
	}
}

// call does one request and decodes its answer into result.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	answer := make(chan frame, 1)
	id, err := c.start(method, params, func(f frame) { answer <- f })
	if err != nil {
		return err
	}
	var f frame
	select {
	case f = <-answer:
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	case <-c.done:
		select {
		case f = <-answer:
		default:
			return c.err
		}
	}
	if f.Error != nil {
		return f.Error.err()
	}
	if result != nil {
		if err := json.Unmarshal(f.Result, result); err != nil {
			return fmt.Errorf("%s: decoding answer: %v: %w", method, err, ErrProtocol)
		}
	}
	return nil
}

// hello checks the protocol version and learns the supervisor's pid.
func (c *conn) hello(ctx context.Context) error {
	var r helloResult
	if err := c.call(ctx, mHello, helloParams{Version: protocolVersion}, &r); err != nil {
		return err
	}
	if r.Version != protocolVersion {
		return fmt.Errorf("supervisor pid %d speaks protocol %d, this binary %d: %w", r.Pid, r.Version, protocolVersion, ErrProtocol)
	}
	c.pid = r.Pid
	return nil
}
