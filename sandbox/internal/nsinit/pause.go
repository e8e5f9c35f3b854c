package nsinit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// PauseConfig describes a pod's pause process.
type PauseConfig struct {
	// NetNS, IPCNS and UTSNS are namespace paths the pause joins (the
	// pod's pinned namespaces); empty leaves the caller's. Its PID
	// namespace is always new: the pause is its PID 1.
	NetNS, IPCNS, UTSNS string
	// StateDir receives the pause executable (PauseName). It may be
	// shared by all pods: the file is only rewritten when it differs.
	StateDir string
	// Place is called with the pause's host PID once it runs (to put it
	// into the pod's cgroup); nil skips it.
	Place func(pid int) error
	// UseGo runs the Go pause (a re-exec of Binary in ModePause, ~2 MiB
	// RSS) instead of the tiny static executable; it is the only choice
	// off linux/amd64.
	UseGo bool
	// Binary is re-executed for the Go pause; it must call Main. Empty
	// means DefaultBinary.
	Binary string
}

// StartPause starts a pod's pause process: PID 1 of a new PID namespace
// (which the pod's containers then join through /proc/<pid>/ns/pid) that
// reaps the orphans reparented to it and exits 0 on SIGTERM or SIGINT.
// Like Create it never waits for the process: the caller reaps it. On
// error after forking, the pause is killed and its PID returned.
//
// On linux/amd64 the pause is a ~300-byte static executable generated
// from hand-assembled machine code, so a pod's pause costs a few pages of
// memory instead of a Go runtime.
func StartPause(ctx context.Context, cfg PauseConfig) (pid int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var joins []nsJoin
	for _, j := range []nsJoin{
		{typ: specs.NetworkNamespace, path: cfg.NetNS, flag: unix.CLONE_NEWNET},
		{typ: specs.IPCNamespace, path: cfg.IPCNS, flag: unix.CLONE_NEWIPC},
		{typ: specs.UTSNamespace, path: cfg.UTSNS, flag: unix.CLONE_NEWUTS},
	} {
		if j.path != "" {
			joins = append(joins, j)
		}
	}
	bin, env := binaryOr(cfg.Binary), []string{ModeEnv + "=" + ModePause}
	if code := pauseELF(); code != nil && !cfg.UseGo {
		if bin, err = writePause(cfg.StateDir, code); err != nil {
			return 0, err
		}
		env = nil
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("nsinit: pause: %w", err)
	}
	defer null.Close()
	fd := null.Fd()
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   env,
		Files: []uintptr{fd, fd, fd},
		Sys:   &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWPID},
	}
	nsfds, err := openJoins(joins)
	if err != nil {
		return 0, fmt.Errorf("nsinit: pause: %w", err)
	}
	defer closeAll(nsfds)
	for attempt := 1; ; attempt++ {
		pid, err = forkJoined(joins, nsfds, func() (int, error) {
			return syscall.ForkExec(bin, []string{"pause"}, attr)
		})
		// A just-written executable may still be open for writing in a
		// child forked concurrently by another goroutine (until it execs).
		if !errors.Is(err, unix.ETXTBSY) || attempt == 20 {
			break
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
	if err != nil {
		return 0, fmt.Errorf("nsinit: start pause %s: %w", bin, err)
	}
	if cfg.Place != nil {
		if err := cfg.Place(pid); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			return pid, fmt.Errorf("nsinit: place pause %d: %w", pid, err)
		}
	}
	return pid, nil
}

// writePause makes dir/PauseName hold code, replacing it atomically when
// it differs.
func writePause(dir string, code []byte) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: pause state dir %q must be absolute", ErrInvalidSpec, dir)
	}
	p := filepath.Join(dir, PauseName)
	if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, code) {
		return p, nil
	}
	f, err := os.CreateTemp(dir, ".pause-*")
	if err != nil {
		return "", fmt.Errorf("nsinit: write pause: %w", err)
	}
	_, err = f.Write(code)
	if cerr := f.Chmod(0o755); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("nsinit: write pause %s: %w", p, err)
	}
	return p, nil
}

// pauseMain is the Go pause (ModePause).
func pauseMain() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT)
	for {
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		if s := <-sigs; s == unix.SIGTERM || s == unix.SIGINT {
			os.Exit(0)
		}
	}
}
