package fake

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/podkit/podkit/sandbox"
)

// containerRec is a container the runner knows.
type containerRec struct {
	// st is what the runner reports (copied out).
	st  sandbox.ContainerStatus
	sb  *sandboxRec
	cfg sandbox.ContainerConfig
	beh Behavior
	seq uint64
	// timer ends an entrypoint that exits by itself.
	timer clock.Timer
	// done is closed when the container exits; made on demand.
	done chan struct{}
	out  []LogLine
}

func nameKey(name string, attempt uint32) string {
	return name + "/" + strconv.FormatUint(uint64(attempt), 10)
}

// public is the container's status for callers. Its labels and
// annotations are the runner's own copies, never modified once the
// container exists, so statuses share them: callers only read them (a
// kubelet relisting a full node every second would otherwise copy every
// map of every container each time).
func (c *containerRec) public() *sandbox.ContainerStatus {
	out := c.st
	return &out
}

// CreateContainer records a Created container in a Ready sandbox and
// decides its Behavior with the Script.
func (r *Runner) CreateContainer(ctx context.Context, sandboxID string, cfg *sandbox.ContainerConfig) (_ string, err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var id string
	defer func() { s.recordLocked("CreateContainer", id, now, err) }()
	if err := s.injectedLocked("CreateContainer"); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("create container in sandbox %s: %w", sandboxID, err)
	}
	sb, ok := s.sandboxes[sandboxID]
	if !ok {
		return "", fmt.Errorf("create container in sandbox %s: %w", sandboxID, sandbox.ErrNotFound)
	}
	if cfg == nil {
		return "", fmt.Errorf("create container in sandbox %s: no configuration: %w", sandboxID, sandbox.ErrInvalid)
	}
	if cfg.Name == "" {
		return "", fmt.Errorf("create container in sandbox %s: no name: %w", sandboxID, sandbox.ErrInvalid)
	}
	if len(MergedCommand(cfg)) == 0 {
		return "", fmt.Errorf("create container %s in sandbox %s: no command, args, entrypoint or cmd: %w", cfg.Name, sandboxID, sandbox.ErrInvalid)
	}
	if _, err := parseSignal(cfg.ImageConfig.StopSignal); err != nil {
		return "", fmt.Errorf("create container %s in sandbox %s: stop signal: %v: %w", cfg.Name, sandboxID, err, sandbox.ErrInvalid)
	}
	if sb.sb.State != sandbox.SandboxReady {
		return "", fmt.Errorf("create container %s in sandbox %s: sandbox is %s: %w", cfg.Name, sandboxID, sb.sb.State, sandbox.ErrNotReady)
	}
	key := nameKey(cfg.Name, cfg.Attempt)
	if other, ok := sb.names[key]; ok {
		return "", fmt.Errorf("create container %s attempt %d in sandbox %s: container %s: %w", cfg.Name, cfg.Attempt, sandboxID, other, sandbox.ErrAlreadyExists)
	}
	c := &containerRec{sb: sb, cfg: *cfg}
	c.cfg.Labels, c.cfg.Annotations = cloneMap(cfg.Labels), cloneMap(cfg.Annotations)
	c.beh = s.script(&sb.cfg, &c.cfg)
	id, c.seq = s.newIDLocked("container")
	c.st = sandbox.ContainerStatus{
		ID: id, SandboxID: sandboxID, Name: cfg.Name, Attempt: cfg.Attempt,
		State: sandbox.ContainerStateCreated, CreatedAt: now,
		Image: cfg.Image, ImageID: cfg.ImageID,
		Labels: c.cfg.Labels, Annotations: c.cfg.Annotations,
	}
	if cfg.LogPath != "" {
		c.st.LogPath = filepath.Join(sb.cfg.LogDirectory, cfg.LogPath)
	}
	sb.containers[id] = c
	sb.names[key] = id
	s.containers[id] = c
	s.emitLocked(c, sandbox.ContainerCreated, now)
	return id, nil
}

// StartContainer runs a Created container's entrypoint: it is Running with
// a synthetic PID, prints its Behavior's lines, and exits at once or after
// RunFor when it exits by itself.
func (r *Runner) StartContainer(ctx context.Context, id string) error {
	s := r.s
	now := s.clock.Now()
	c, runFor, err := s.start(id, now)
	if err != nil || runFor <= 0 {
		return err
	}
	// Arm the timer without our lock (see the package doc on clocks).
	deadline := now.Add(runFor)
	t := s.clock.AfterFunc(runFor, func() { s.expire(c, deadline) })
	s.mu.Lock()
	keep := c.st.State == sandbox.ContainerStateRunning
	if keep {
		c.timer = t
	}
	s.mu.Unlock()
	if !keep { // it was stopped meanwhile, or the timer fired already
		t.Stop()
	}
	return nil
}

// start moves a Created container to Running (or straight to Exited) and
// says after how long it exits by itself (0: not on a timer).
func (s *state) start(id string, now time.Time) (_ *containerRec, runFor time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.recordLocked("StartContainer", id, now, err) }()
	if err := s.injectedLocked("StartContainer"); err != nil {
		return nil, 0, err
	}
	c, ok := s.containers[id]
	if !ok {
		return nil, 0, fmt.Errorf("start container %s: %w", id, sandbox.ErrNotFound)
	}
	if c.st.State != sandbox.ContainerStateCreated {
		return nil, 0, fmt.Errorf("start container %s: container is %s: %w", id, c.st.State, sandbox.ErrNotReady)
	}
	b := &c.beh
	if b.StartError != nil {
		c.st.Message = b.StartError.Error()
		s.exitLocked(c, now, exitStartError, ReasonStartError)
		return nil, 0, fmt.Errorf("start container %s: %w", id, b.StartError)
	}
	c.st.State = sandbox.ContainerStateRunning
	c.st.StartedAt = now
	c.st.PID = s.newPIDLocked()
	s.emitLocked(c, sandbox.ContainerStarted, now)
	s.printLocked(c, now, b.Stdout, b.Stderr)
	if b.RunFor > 0 {
		return c, b.RunFor, nil
	}
	if b.Exits || b.OOM {
		code, reason := b.selfExit()
		s.exitLocked(c, now, code, reason)
	}
	return c, 0, nil
}

// selfExit is the exit status of an entrypoint that ends by itself.
func (b *Behavior) selfExit() (int32, string) {
	if b.OOM {
		return exitKilled, sandbox.ReasonOOMKilled
	}
	return b.ExitCode, reasonFor(b.ExitCode)
}

// ContainerStatus reports a container.
func (r *Runner) ContainerStatus(ctx context.Context, id string) (_ *sandbox.ContainerStatus, err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.recordLocked("ContainerStatus", id, now, err) }()
	if err := s.injectedLocked("ContainerStatus"); err != nil {
		return nil, err
	}
	c, ok := s.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, sandbox.ErrNotFound)
	}
	return c.public(), nil
}

// List reports every sandbox and container, in creation order.
func (r *Runner) List(ctx context.Context) (_ []*sandbox.Sandbox, _ []*sandbox.ContainerStatus, err error) {
	s := r.s
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.recordLocked("List", "", now, err) }()
	if err := s.injectedLocked("List"); err != nil {
		return nil, nil, err
	}
	sbs := slices.Collect(maps.Values(s.sandboxes))
	sortBySeq(sbs, func(sb *sandboxRec) uint64 { return sb.seq })
	outS := make([]*sandbox.Sandbox, 0, len(sbs))
	var outC []*sandbox.ContainerStatus
	for _, sb := range sbs {
		outS = append(outS, sb.public())
		for _, c := range sb.sortedContainers() {
			outC = append(outC, c.public())
		}
	}
	return outS, outC, nil
}
