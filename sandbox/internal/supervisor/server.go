package supervisor

import (
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// config is the supervisor's configuration; Main fills it from the
// environment, the rest are defaults kept here so they are visible.
type config struct {
	root string
	// cgroupProcs: the supervisor moves itself into these cgroups.
	cgroupProcs []string
	// idle: exit after this long without running tasks and clients; <= 0
	// never.
	idle time.Duration
	// drainGrace bounds how long an exit waits for the task's output
	// pipes to reach EOF before the exit is recorded (a process the task
	// left behind may hold them open).
	drainGrace time.Duration
	// unclaimedTTL and unclaimedMax bound how long and how many exit
	// statuses of pids that are no known task are kept.
	unclaimedTTL time.Duration
	unclaimedMax int
	// lockWait bounds how long a starting supervisor waits for the pid
	// file lock held by one that is exiting.
	lockWait time.Duration
	// writeTimeout bounds a write to a client that does not read.
	writeTimeout time.Duration
	now          func() time.Time
	openSink     func(path string) (logSink, error)
}

func defaultConfig(root string) config {
	c := config{
		root:         root,
		idle:         DefaultIdleExit,
		drainGrace:   2 * time.Second,
		unclaimedTTL: time.Minute,
		unclaimedMax: 4096,
		lockWait:     10 * time.Second,
		writeTimeout: time.Minute,
		now:          time.Now,
	}
	c.openSink = func(path string) (logSink, error) { return openSink(path, c.now) }
	return c
}

// server is the supervisor's state. One mutex guards everything; the
// reaper holds it across each wait4 so that a pid is never reaped between
// a lookup and a registration (see claimLocked).
type server struct {
	cfg    config
	log    *slog.Logger
	native NativeLauncher
	bufs   *sync.Pool // read buffers of the output copiers

	mu        sync.Mutex
	tasks     map[string]*task
	waiters   map[int]func(ws unix.WaitStatus, at time.Time)
	unclaimed map[int]reaped
	subs      map[*stateQueue]struct{} // Events streams
	conns     map[*serverConn]struct{}
	idleGen   uint64
	idleTimer *time.Timer
	closing   bool
	stop      chan struct{} // closed when the idle exit begins
}

// reaped is the exit status of a pid no task has claimed yet.
type reaped struct {
	ws unix.WaitStatus
	at time.Time
}

func newServer(cfg config, native NativeLauncher, log *slog.Logger) *server {
	return &server{
		cfg: cfg, log: log, native: native, bufs: newBufPool(),
		tasks:     map[string]*task{},
		waiters:   map[int]func(unix.WaitStatus, time.Time){},
		unclaimed: map[int]reaped{},
		subs:      map[*stateQueue]struct{}{},
		conns:     map[*serverConn]struct{}{},
		stop:      make(chan struct{}),
	}
}

func (s *server) taskDir(id string) string { return filepath.Join(s.cfg.root, tasksDir, id) }

// serve accepts clients until the idle exit begins.
func (s *server) serve(ln net.Listener) {
	go func() {
		<-s.stop
		ln.Close()
	}()
	s.mu.Lock()
	s.updateIdleLocked()
	s.mu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept", "err", err)
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond): // e.g. EMFILE: let fds free up
			}
			continue
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			conn.Close()
			continue
		}
		sc := newServerConn(s, conn)
		s.conns[sc] = struct{}{}
		s.updateIdleLocked()
		s.mu.Unlock()
		go sc.serve()
	}
}

// dropConn forgets a disconnected client.
func (s *server) dropConn(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.updateIdleLocked()
	s.mu.Unlock()
}

// idleLocked: no clients and no task that still runs (or is being
// created). Exited tasks do not keep the supervisor: their exits are on
// disk and a new supervisor reloads them.
func (s *server) idleLocked() bool {
	if len(s.conns) > 0 {
		return false
	}
	for _, t := range s.tasks {
		if t.exit == nil {
			return false
		}
	}
	return true
}

// updateIdleLocked arms the idle timer when the supervisor became idle and
// disarms it when it no longer is.
func (s *server) updateIdleLocked() {
	if s.cfg.idle <= 0 || s.closing {
		return
	}
	idle := s.idleLocked()
	switch {
	case idle && s.idleTimer == nil:
		s.idleGen++
		gen := s.idleGen
		s.idleTimer = time.AfterFunc(s.cfg.idle, func() { s.idleFired(gen) })
	case !idle && s.idleTimer != nil:
		s.idleTimer.Stop()
		s.idleTimer = nil
	}
}

func (s *server) idleFired(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.idleGen || s.idleTimer == nil || s.closing || !s.idleLocked() {
		return
	}
	s.log.Info("idle: no running tasks and no clients; exiting", "after", s.cfg.idle)
	s.closing = true
	close(s.stop)
}

func (s *server) subscribe() *stateQueue {
	sub := newStateQueue()
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	return sub
}

func (s *server) unsubscribe(sub *stateQueue) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

func (s *server) publishLocked(st TaskState) {
	for sub := range s.subs {
		sub.push(st)
	}
}
