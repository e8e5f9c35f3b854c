package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/podkit/podkit/sandbox/internal/supervisor"
)

// Removing the root on a clean shutdown. The root is what a later runtime
// adopts running containers from: their records, their pinned namespaces,
// the supervisor's socket and task records. A node that stops with its
// containers left running (the kubelet restarting) keeps it whole. A node
// that removed every sandbox first (podkit's Node.Shutdown) has nothing
// left to adopt, and RemoveRoot takes the directory away too, once the
// supervisor, which lingers for its idle time after the last runtime
// disconnected, has exited: while it serves, its socket and pid file are
// how the next runtime finds it, and on exit it removes them by name, so
// a root recreated under it would lose the new supervisor's.

// ErrRootInUse is wrapped by RemoveRoot's error when the root still holds
// state a later runtime would need: sandbox or container records, tasks
// of the supervisor, mounts, a supervisor that does not exit, or files
// the runtime does not know.
var ErrRootInUse = errors.New("runtime root still in use")

// rootEntries are the names a runtime root holds once nothing lives in
// it: the state directories (empty) and the supervisor's
// (supervisor.RootEntries).
func rootEntries() []string {
	return append([]string{"sandboxes", "containers"}, supervisor.RootEntries()...)
}

// supervisorExitMargin is how much longer than its idle time RemoveRoot
// waits for the supervisor to exit.
const supervisorExitMargin = 5 * time.Second

// RemoveRoot removes Config.Root after Close when no sandbox or container
// is left in it: it waits for the supervisor to exit (at most its idle
// time plus a margin, and until ctx ends), checks that nothing lives in
// the root any more (no record, no task, no mount, nothing unknown) and
// deletes it. Otherwise it leaves the root as it is and returns an error
// wrapping ErrRootInUse.
func (r *Runtime) RemoveRoot(ctx context.Context) error {
	select {
	case <-r.done:
	default:
		return fmt.Errorf("%w: the runtime is not closed", ErrRootInUse)
	}
	r.mu.Lock()
	sandboxes, containers := len(r.sandboxes), len(r.containers)
	r.mu.Unlock()
	if sandboxes+containers > 0 {
		return fmt.Errorf("%w: %d sandboxes and %d containers left", ErrRootInUse, sandboxes, containers)
	}
	idle := r.cfg.SupervisorIdleExit
	if idle <= 0 {
		idle = supervisor.DefaultIdleExit
	}
	wctx, cancel := context.WithTimeout(ctx, idle+supervisorExitMargin)
	defer cancel()
	if err := waitSupervisorExit(wctx, r.cfg.Root); err != nil {
		return fmt.Errorf("%w: %w", ErrRootInUse, err)
	}
	return removeIdleRoot(r.cfg.Root)
}

// waitSupervisorExit waits until no supervisor serves root: its pid file
// is gone (it removes it last, under its lock) or nobody holds the lock on
// it (a supervisor that was killed).
func waitSupervisorExit(ctx context.Context, root string) error {
	for {
		running, err := supervisor.Running(root)
		if err != nil || !running {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the supervisor of %s is still running: %w", root, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// removeIdleRoot deletes root when it holds only what an idle runtime
// leaves. It holds the supervisor's start lock meanwhile, so a runtime
// connecting at the same moment waits instead of starting a supervisor in
// a directory being removed.
func removeIdleRoot(root string) error {
	lock, err := os.OpenFile(supervisor.StartLockPath(root), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("runtime root: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fmt.Errorf("%w: a supervisor is starting in %s", ErrRootInUse, root)
	}
	// A runtime may have started a supervisor between the wait and the
	// lock (starting takes the lock only briefly): look again under it.
	if running, err := supervisor.Running(root); err != nil || running {
		if err == nil {
			err = fmt.Errorf("%w: a supervisor serves %s", ErrRootInUse, root)
		}
		return err
	}
	if err := rootIdle(root); err != nil {
		return err
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("removing runtime root: %w", err)
	}
	return nil
}

// rootIdle checks that root holds nothing alive: only the known entries,
// the state directories empty, no mount at or below it.
func rootIdle(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("runtime root: %w", err)
	}
	known := rootEntries()
	for _, e := range entries {
		if !slices.Contains(known, e.Name()) {
			return fmt.Errorf("%w: unknown entry %s", ErrRootInUse, filepath.Join(root, e.Name()))
		}
	}
	for _, d := range []string{"sandboxes", "containers", "tasks"} {
		left, err := os.ReadDir(filepath.Join(root, d))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("runtime root: %w", err)
		}
		if len(left) > 0 {
			return fmt.Errorf("%w: %s holds %d entries", ErrRootInUse, filepath.Join(root, d), len(left))
		}
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("runtime root: %w", err)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(real))
	if err != nil {
		return fmt.Errorf("runtime root: %w", err)
	}
	if len(mounts) > 0 {
		return fmt.Errorf("%w: %s is mounted at %s", ErrRootInUse, mounts[0].Source, mounts[0].Mountpoint)
	}
	return nil
}
