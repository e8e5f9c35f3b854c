package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Main is the supervisor process: the re-exec'd binary calls it when
// PODKIT_SANDBOX_MODE is Mode (Connect starts it so). native makes the
// processes of KindNative tasks. Main never returns: it exits 0 after an
// idle exit, 1 when it cannot start.
func Main(native NativeLauncher) {
	os.Exit(run(native))
}

func run(native NativeLauncher) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("supervisor", os.Getpid())
	cfg, ready, err := configFromEnv()
	if err != nil {
		return fail(log, ready, err)
	}
	for _, f := range cfg.cgroupProcs {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fail(log, ready, fmt.Errorf("move into cgroup: %w", err))
		}
	}
	// Container processes are our children: they must not inherit the
	// re-exec switch (a task running this binary would become a
	// supervisor).
	for _, k := range supervisorEnv {
		os.Unsetenv(k)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(log, ready, fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err))
	}
	lock, err := lockPidFile(filepath.Join(cfg.root, pidName), cfg.lockWait)
	if err != nil {
		return fail(log, ready, err)
	}
	defer lock.Close()
	s := newServer(cfg, native, log)
	reaperCtx, stopReaper := context.WithCancel(context.Background())
	defer stopReaper()
	go s.reap(reaperCtx)
	if err := s.reload(); err != nil {
		return fail(log, ready, err)
	}
	ln, err := listen(filepath.Join(cfg.root, sockName))
	if err != nil {
		return fail(log, ready, err)
	}
	if err := lock.Truncate(0); err == nil {
		_, err = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		ln.Close()
		return fail(log, ready, fmt.Errorf("pid file: %w", err))
	}
	log.Info("supervisor serving", "root", cfg.root, "tasks", len(s.tasks), "idleExit", cfg.idle)
	if ready != nil {
		ready.WriteString("ready " + strconv.Itoa(os.Getpid()) + "\n")
		ready.Close()
	}
	s.serve(ln)
	// Idle exit: the socket goes first so no client reaches a dying
	// supervisor, the pid file while the lock is still held.
	os.Remove(filepath.Join(cfg.root, sockName))
	os.Remove(filepath.Join(cfg.root, pidName))
	log.Info("supervisor exited")
	return 0
}

// fail reports a start failure to the log and to the starter.
func fail(log *slog.Logger, ready *os.File, err error) int {
	log.Error("supervisor cannot start", "err", err)
	if ready != nil {
		ready.WriteString(err.Error())
		ready.Close()
	}
	return 1
}

// configFromEnv reads what Connect passed.
func configFromEnv() (config, *os.File, error) {
	var ready *os.File
	if v := os.Getenv(envReadyFD); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil || fd < 3 {
			return config{}, nil, fmt.Errorf("%s=%q is not a file descriptor", envReadyFD, v)
		}
		unix.CloseOnExec(fd)
		ready = os.NewFile(uintptr(fd), "ready")
	}
	root := os.Getenv(envRoot)
	if root == "" || !filepath.IsAbs(root) {
		return config{}, ready, fmt.Errorf("%s=%q is not an absolute path", envRoot, root)
	}
	cfg := defaultConfig(root)
	if v := os.Getenv(envIdle); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return config{}, ready, fmt.Errorf("%s: %w", envIdle, err)
		}
		cfg.idle = d
	}
	if v := os.Getenv(envCgroup); v != "" {
		if err := json.Unmarshal([]byte(v), &cfg.cgroupProcs); err != nil {
			return config{}, ready, fmt.Errorf("%s: %w", envCgroup, err)
		}
	}
	return cfg, ready, nil
}

// lockPidFile takes the supervisor's lifetime lock: an exclusive flock on
// the pid file. Only its holder serves root. A supervisor that is exiting
// still holds it briefly, so a new one waits up to wait. The file is
// removed by its holder on exit; a lock taken on a file that was unlinked
// meanwhile is retried on the new file.
func lockPidFile(path string, wait time.Duration) (*os.File, error) {
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("pid file: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			var held, now unix.Stat_t
			if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
				return f, nil
			}
			f.Close() // unlinked by the previous holder: lock the new file
			continue
		}
		f.Close()
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			pid, _ := os.ReadFile(path)
			return nil, fmt.Errorf("another supervisor (pid %s) holds %s", bytesTrim(pid), path)
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

func bytesTrim(b []byte) string {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return string(b)
}

// listen replaces a stale socket (we hold the lock: no live supervisor
// serves it) and listens, with the socket accessible to root only.
func listen(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("stale socket: %w", err)
	}
	old := syscall.Umask(0o077) // no other goroutine creates files yet
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}
