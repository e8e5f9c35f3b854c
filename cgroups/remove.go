package cgroups

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"
)

// Remove kills what is left in the cgroup at path and its descendants,
// waits until no process remains, then removes every directory of the
// subtree in every hierarchy. Pods removed with it stop counting towards
// their QoS tier. Removing the root removes the whole tree (Cleanup).
func (t *Tree) Remove(ctx context.Context, p string) error {
	p, err := t.inside(p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dirs := t.d.dirs(p)
	if !existsAny(dirs) {
		t.forget(p)
		return nil
	}
	if err := t.drain(ctx, p); err != nil {
		return fmt.Errorf("cgroups: remove %s: %w", p, err)
	}
	if err := removeDirs(ctx, dirs, t.o.poll); err != nil {
		return fmt.Errorf("cgroups: remove %s: %w", p, err)
	}
	structural := p == t.o.root || p == path.Join(t.o.root, BurstableTier) || p == path.Join(t.o.root, BestEffortTier)
	if structural {
		t.mu.Lock()
		t.tiersReady = false
		t.mu.Unlock()
	}
	if t.forget(p) && !structural {
		t.mu.Lock()
		err := t.ensureTiers()
		t.mu.Unlock()
		if err != nil {
			return fmt.Errorf("cgroups: update tiers after removing %s: %w", p, err)
		}
	}
	t.o.logger.Debug("cgroup removed", "path", p)
	return nil
}

// Cleanup removes the whole tree, killing anything still inside.
func (t *Tree) Cleanup(ctx context.Context) error { return t.Remove(ctx, t.o.root) }

// drain kills the processes under p until none is left. Processes can
// appear while it works (a fork racing the kill), so it loops.
func (t *Tree) drain(ctx context.Context, p string) error {
	killed := false
	for {
		pids, err := t.d.procs(p)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if !killed || !zombiesOnly(pids) {
			if err := t.d.kill(p); err != nil {
				return err
			}
			killed = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d process(es) still inside (%v): %w", len(pids), pids, ctx.Err())
		case <-time.After(t.o.poll):
		}
	}
}

// zombiesOnly reports whether every pid is a zombie waiting for its
// parent; signalling those again is pointless.
func zombiesOnly(pids []int) bool {
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone
		}
		// The state follows the command name in parentheses.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) || s[i+2] != 'Z' {
			return false
		}
	}
	return true
}

// forget drops pods at or under p from the tier accounting and reports
// whether any was dropped.
func (t *Tree) forget(p string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	dropped := false
	for uid, e := range t.pods {
		if within(p, e.path) {
			delete(t.pods, uid)
			dropped = true
		}
	}
	return dropped
}
