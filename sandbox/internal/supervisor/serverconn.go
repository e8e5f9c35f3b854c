package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// serverConn is one client connection.
type serverConn struct {
	s    *server
	conn net.Conn
	ctx  context.Context
	stop context.CancelFunc

	wmu sync.Mutex
	enc *json.Encoder

	mu       sync.Mutex
	inflight map[uint64]context.CancelFunc
}

func newServerConn(s *server, conn net.Conn) *serverConn {
	ctx, stop := context.WithCancel(context.Background())
	return &serverConn{s: s, conn: conn, ctx: ctx, stop: stop, enc: json.NewEncoder(conn),
		inflight: map[uint64]context.CancelFunc{}}
}

// serve reads requests until the client disconnects; each runs in its own
// goroutine with a context cancelled by the client's cancel frame or by
// the disconnection.
func (sc *serverConn) serve() {
	defer sc.s.dropConn(sc)
	defer sc.conn.Close()
	defer sc.stop()
	dec := json.NewDecoder(bufio.NewReader(sc.conn))
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			return
		}
		if f.Cancel {
			sc.mu.Lock()
			if cancel := sc.inflight[f.ID]; cancel != nil {
				cancel()
			}
			sc.mu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(sc.ctx)
		sc.mu.Lock()
		if old := sc.inflight[f.ID]; old != nil {
			old() // a client reusing an id gives up the old call
		}
		sc.inflight[f.ID] = cancel
		sc.mu.Unlock()
		go func(f frame) {
			defer func() {
				cancel()
				sc.mu.Lock()
				delete(sc.inflight, f.ID)
				sc.mu.Unlock()
			}()
			sc.handle(ctx, f)
		}(f)
	}
}

// send writes one frame; a failed write ends the connection.
func (sc *serverConn) send(f frame) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	if sc.s.cfg.writeTimeout > 0 {
		sc.conn.SetWriteDeadline(time.Now().Add(sc.s.cfg.writeTimeout))
	}
	if err := sc.enc.Encode(f); err != nil {
		sc.stop()
		sc.conn.Close()
		return err
	}
	return nil
}

func (sc *serverConn) reply(id uint64, result any, err error) {
	f := frame{ID: id, Error: toWire(err)}
	if err == nil && result != nil {
		b, merr := json.Marshal(result)
		if merr != nil {
			f.Error = toWire(fmt.Errorf("encoding %T: %w", result, merr))
		} else {
			f.Result = b
		}
	}
	sc.send(f)
}

func (sc *serverConn) handle(ctx context.Context, f frame) {
	s := sc.s
	decode := func(v any) error {
		if err := json.Unmarshal(f.Params, v); err != nil {
			return fmt.Errorf("%s: bad parameters: %v: %w", f.Method, err, ErrProtocol)
		}
		return nil
	}
	switch f.Method {
	case mHello:
		sc.reply(f.ID, helloResult{Version: protocolVersion, Pid: os.Getpid()}, nil)
	case mCreate:
		var spec TaskSpec
		if err := decode(&spec); err != nil {
			sc.reply(f.ID, nil, err)
			return
		}
		st, err := s.createTask(ctx, spec)
		sc.reply(f.ID, st, err)
	case mSignal:
		var p signalParams
		if err := decode(&p); err != nil {
			sc.reply(f.ID, nil, err)
			return
		}
		sc.reply(f.ID, nil, s.signal(p.ID, syscall.Signal(p.Signal)))
	case mState:
		var p idParams
		if err := decode(&p); err != nil {
			sc.reply(f.ID, nil, err)
			return
		}
		st, err := s.state(p.ID)
		sc.reply(f.ID, st, err)
	case mList:
		sc.reply(f.ID, s.list(), nil)
	case mDelete:
		var p deleteParams
		if err := decode(&p); err != nil {
			sc.reply(f.ID, nil, err)
			return
		}
		sc.reply(f.ID, nil, s.delete(ctx, p.ID, p.Force))
	case mWait:
		var p idParams
		if err := decode(&p); err != nil {
			sc.reply(f.ID, nil, err)
			return
		}
		st, err := s.wait(ctx, p.ID)
		sc.reply(f.ID, st, err)
	case mEvents:
		sc.events(ctx, f.ID)
	default:
		sc.reply(f.ID, nil, fmt.Errorf("unknown method %q: %w", f.Method, ErrProtocol))
	}
}

// events streams exits: first an empty frame acknowledging the
// subscription (so a client that lists after subscribing misses nothing),
// then one frame per exit, until the request is cancelled.
func (sc *serverConn) events(ctx context.Context, id uint64) {
	sub := sc.s.subscribe()
	defer sc.s.unsubscribe(sub)
	if sc.send(frame{ID: id, More: true}) != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			sc.reply(id, nil, ctx.Err())
			return
		case <-sub.notify:
		}
		for _, st := range sub.take() {
			b, err := json.Marshal(st)
			if err != nil {
				continue
			}
			if sc.send(frame{ID: id, More: true, Result: b}) != nil {
				return
			}
		}
	}
}
