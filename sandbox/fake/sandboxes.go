package fake

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/sandbox"
)

// sandboxRec is a sandbox the runner knows.
type sandboxRec struct {
	// sb is what the runner reports (copied out).
	sb  sandbox.Sandbox
	cfg sandbox.SandboxConfig
	seq uint64
	// podKey is the pod's reservation in state.pods.
	podKey     string
	containers map[string]*containerRec
	// names maps name/attempt to container ID.
	names map[string]string
}

func podKey(p sandbox.PodMeta) string {
	return p.Namespace + "/" + p.Name + "/" + p.UID + "/" + strconv.FormatUint(uint64(p.Attempt), 10)
}

// public is the sandbox for callers, sharing its labels, annotations and
// addresses as containerRec.public does (the runner replaces, never
// modifies, them).
func (sb *sandboxRec) public() *sandbox.Sandbox {
	out := sb.sb
	return &out
}

// sortedContainers lists a sandbox's containers in creation order.
func (sb *sandboxRec) sortedContainers() []*containerRec {
	cs := slices.Collect(maps.Values(sb.containers))
	sortBySeq(cs, func(c *containerRec) uint64 { return c.seq })
	return cs
}

// RunPodSandbox creates a Ready sandbox with an address from the pod CIDR
// (none with HostNetwork) and, with SharePID, a synthetic pause PID.
func (r *Runner) RunPodSandbox(ctx context.Context, cfg *sandbox.SandboxConfig) (_ *sandbox.Sandbox, err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var id string
	defer func() { s.recordLocked("RunPodSandbox", id, now, err) }()
	if err := s.injectedLocked("RunPodSandbox"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run sandbox: %w", err)
	}
	if cfg == nil {
		return nil, fmt.Errorf("run sandbox: no configuration: %w", sandbox.ErrInvalid)
	}
	p := cfg.Pod
	if p.Name == "" || p.Namespace == "" || p.UID == "" {
		return nil, fmt.Errorf("run sandbox for pod %s/%s (uid %q): name, namespace and uid are required: %w",
			p.Namespace, p.Name, p.UID, sandbox.ErrInvalid)
	}
	if cfg.RuntimeHandler != "" && !s.handlers[cfg.RuntimeHandler] {
		return nil, fmt.Errorf("run sandbox for pod %s/%s: handler %q: %w", p.Namespace, p.Name, cfg.RuntimeHandler, sandbox.ErrUnknownHandler)
	}
	key := podKey(p)
	if other, ok := s.pods[key]; ok {
		return nil, fmt.Errorf("run sandbox for pod %s/%s attempt %d: sandbox %s: %w", p.Namespace, p.Name, p.Attempt, other, sandbox.ErrAlreadyExists)
	}
	rec := &sandboxRec{
		cfg: *cfg, podKey: key,
		containers: map[string]*containerRec{}, names: map[string]string{},
	}
	rec.cfg.Labels, rec.cfg.Annotations = cloneMap(cfg.Labels), cloneMap(cfg.Annotations)
	var ips []netip.Addr
	if !cfg.HostNetwork {
		ip, err := s.ipam.allocate()
		if err != nil {
			return nil, fmt.Errorf("run sandbox for pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		ips = append(ips, ip)
	}
	id, rec.seq = s.newIDLocked("sandbox")
	rec.sb = sandbox.Sandbox{
		ID: id, Pod: p, State: sandbox.SandboxReady, CreatedAt: now, IPs: ips,
		RuntimeHandler: cfg.RuntimeHandler, Labels: rec.cfg.Labels, Annotations: rec.cfg.Annotations,
	}
	if cfg.SharePID && !cfg.HostPID {
		rec.sb.PausePID = s.newPIDLocked()
	}
	s.sandboxes[id] = rec
	s.pods[key] = id
	return rec.public(), nil
}

// StopPodSandbox kills the sandbox's containers (137, no grace), releases
// its address and marks it NotReady. Stopping a stopped sandbox succeeds.
func (r *Runner) StopPodSandbox(ctx context.Context, id string) (err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	var timers []clock.Timer
	defer func() {
		s.recordLocked("StopPodSandbox", id, now, err)
		s.mu.Unlock()
		stopTimers(timers)
	}()
	if err := s.injectedLocked("StopPodSandbox"); err != nil {
		return err
	}
	sb, ok := s.sandboxes[id]
	if !ok {
		return fmt.Errorf("stop sandbox %s: %w", id, sandbox.ErrNotFound)
	}
	timers = s.stopSandboxLocked(sb, now)
	return nil
}

// stopSandboxLocked kills what runs in sb and tears its network down. It
// returns the timers to stop once the lock is released.
func (s *state) stopSandboxLocked(sb *sandboxRec, now time.Time) []clock.Timer {
	var timers []clock.Timer
	for _, c := range sb.sortedContainers() {
		if c.st.State == sandbox.ContainerStateCreated || c.st.State == sandbox.ContainerStateRunning {
			timers = appendTimer(timers, s.exitLocked(c, now, exitKilled, sandbox.ReasonError))
		}
	}
	for _, ip := range sb.sb.IPs {
		s.ipam.release(ip)
	}
	sb.sb.IPs = nil
	sb.sb.PausePID = 0
	sb.sb.State = sandbox.SandboxNotReady
	return timers
}

// RemovePodSandbox stops the sandbox if needed, then forgets it and its
// containers. Removing an unknown sandbox succeeds.
func (r *Runner) RemovePodSandbox(ctx context.Context, id string) (err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	var timers []clock.Timer
	defer func() {
		s.recordLocked("RemovePodSandbox", id, now, err)
		s.mu.Unlock()
		stopTimers(timers)
	}()
	if err := s.injectedLocked("RemovePodSandbox"); err != nil {
		return err
	}
	sb, ok := s.sandboxes[id]
	if !ok {
		return nil
	}
	timers = s.stopSandboxLocked(sb, now)
	for _, c := range sb.sortedContainers() {
		s.deleteContainerLocked(c, now)
	}
	delete(s.pods, sb.podKey)
	delete(s.sandboxes, id)
	return nil
}
