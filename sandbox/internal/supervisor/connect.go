package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type options struct {
	binary string
	log    *slog.Logger
	idle   time.Duration
	cgroup []string
}

// Option configures Connect.
type Option func(*options) error

// WithBinary sets the binary re-executed as the supervisor (default
// /proc/self/exe); its main must dispatch PODKIT_SANDBOX_MODE=supervisor
// to Main.
func WithBinary(path string) Option {
	return func(o *options) error {
		if path == "" {
			return errors.New("supervisor binary path is empty")
		}
		o.binary = path
		return nil
	}
}

// WithLogger sets the client's logger (the supervisor itself logs to
// <root>/supervisor.log).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l != nil {
			o.log = l
		}
		return nil
	}
}

// WithIdleExit sets how long a supervisor that Connect starts waits,
// without running tasks and clients, before it exits (DefaultIdleExit; 0:
// never). It does not change a supervisor that already runs.
func WithIdleExit(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("idle exit %v is negative", d)
		}
		o.idle = d
		return nil
	}
}

// WithCgroupProcs makes a supervisor that Connect starts move itself into
// these cgroups (their cgroup.procs files, one per v1 hierarchy or the v2
// one) before anything else. Use it to take the supervisor out of the
// caller's cgroup: a service manager stopping the kubelet kills every
// process of the kubelet's cgroup, and the supervisor must survive that.
// Processes the supervisor starts inherit these cgroups until they are
// placed in their own.
func WithCgroupProcs(files ...string) Option {
	return func(o *options) error {
		for _, f := range files {
			if !filepath.IsAbs(f) {
				return fmt.Errorf("cgroup.procs path %q is not absolute", f)
			}
		}
		o.cgroup = append([]string(nil), files...)
		return nil
	}
}

// Connect connects to the supervisor of root (<root>/supervisor.sock),
// starting it when none runs. Callers that start one at the same time,
// in any processes, serialise on <root>/supervisor.lock, so one
// supervisor starts and all connect to it.
func Connect(ctx context.Context, root string, opts ...Option) (*Client, error) {
	o := options{binary: "/proc/self/exe", log: slog.New(slog.DiscardHandler), idle: DefaultIdleExit}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("supervisor: %w", err)
		}
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("supervisor root: %w", err)
	}
	sock := filepath.Join(root, sockName)
	if len(sock) >= len(unix.RawSockaddrUnix{}.Path) {
		return nil, fmt.Errorf("supervisor socket path %s is longer than a unix socket allows", sock)
	}
	if err := os.MkdirAll(root, 0o711); err != nil {
		return nil, fmt.Errorf("supervisor root: %w", err)
	}
	c := &Client{root: root, o: o}
	if _, err := c.conn(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// dialOrStart dials the supervisor of root, starting it when none answers.
// A supervisor whose idle exit begins as a client connects closes the
// connection before it answers the hello (the client was still in the
// listen backlog when the idle timer saw no clients): that is retried a
// few times, after which the socket is gone and a new supervisor starts.
func dialOrStart(ctx context.Context, root string, o options) (*conn, error) {
	delay := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := dialOrStartOnce(ctx, root, o)
		if err == nil || !errors.Is(err, ErrClosed) || attempt == 5 || ctx.Err() != nil {
			return c, err
		}
		o.log.Info("supervisor closed the connection before the hello (exiting?); retrying", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// dialOrStartOnce is one attempt of dialOrStart.
func dialOrStartOnce(ctx context.Context, root string, o options) (*conn, error) {
	sock := filepath.Join(root, sockName)
	c, err := dial(ctx, sock, o.log)
	if err == nil || errors.Is(err, ErrProtocol) {
		return c, err
	}
	unlock, err := lockStart(ctx, filepath.Join(root, lockName))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Someone may have started it while we waited for the lock.
	if c, err := dial(ctx, sock, o.log); err == nil || errors.Is(err, ErrProtocol) {
		return c, err
	}
	if err := startSupervisor(ctx, root, o); err != nil {
		return nil, err
	}
	return dial(ctx, sock, o.log)
}

// dial connects and checks the protocol.
func dial(ctx context.Context, sock string, log *slog.Logger) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("supervisor %s: %w", sock, err)
	}
	c := newConn(nc, log)
	if err := c.hello(ctx); err != nil {
		c.close()
		return nil, fmt.Errorf("supervisor %s: %w", sock, err)
	}
	return c, nil
}

// lockStart takes the start lock: a flock that is polled, so ctx bounds
// the wait.
func lockStart(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("supervisor start lock: %w", err)
	}
	delay := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("supervisor start lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("supervisor start lock %s: %w", path, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// startSupervisor re-executes the binary as the supervisor: detached in
// its own session (it must outlive the caller), output to
// <root>/supervisor.log, and waits until it listens or fails. The caller
// keeps a goroutine that reaps it when it exits before the caller does.
func startSupervisor(ctx context.Context, root string, o options) error {
	logf, err := os.OpenFile(filepath.Join(root, logName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("supervisor log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	env := []string{envMode + "=" + Mode, envRoot + "=" + root, envIdle + "=" + o.idle.String(), envReadyFD + "=3"}
	if len(o.cgroup) > 0 {
		b, err := json.Marshal(o.cgroup)
		if err != nil {
			return err
		}
		env = append(env, envCgroup+"="+string(b))
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(supervisorEnv, k) {
			env = append(env, kv)
		}
	}
	proc, err := os.StartProcess(o.binary, []string{procTitle, root}, &os.ProcAttr{
		Dir: "/", Env: env, Files: []*os.File{devnull, logf, logf, readyW},
		Sys: &syscall.SysProcAttr{Setsid: true},
	})
	readyW.Close()
	if err != nil {
		return fmt.Errorf("start supervisor %s: %w", o.binary, err)
	}
	exited := make(chan string, 1)
	go func() {
		st, err := proc.Wait()
		msg := fmt.Sprint(err)
		if err == nil {
			msg = st.String()
		}
		o.log.Info("supervisor exited", "pid", proc.Pid, "status", msg)
		exited <- msg
	}()
	o.log.Info("supervisor started", "pid", proc.Pid, "root", root)
	answer := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(readyR, 4096))
		answer <- string(b)
	}()
	select {
	case msg := <-answer:
		if strings.HasPrefix(msg, "ready ") {
			return nil
		}
		if msg == "" {
			msg = "exited: " + <-exited
		}
		return fmt.Errorf("supervisor (pid %d) did not start: %s (see %s)", proc.Pid, strings.TrimSpace(msg), filepath.Join(root, logName))
	case <-ctx.Done():
		return fmt.Errorf("starting supervisor (pid %d): %w", proc.Pid, ctx.Err())
	}
}
