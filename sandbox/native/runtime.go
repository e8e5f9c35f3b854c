package native

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/podkit/podkit/cgroups"
	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/internal/supervisor"
)

// DefaultRoot is where the runtime keeps its state when Config.Root is
// empty: pinned namespaces, container bundles and the supervisor's socket.
// It belongs on a tmpfs: none of it survives a reboot, and nothing should.
const DefaultRoot = "/run/podkit/sandbox"

// Config holds the runtime's collaborators. Only Root has a default; a nil
// Network leaves pods with loopback only, a nil Cgroups runs containers in
// the supervisor's cgroup.
type Config struct {
	// Root is the state directory (DefaultRoot when empty).
	Root string
	// Network wires each sandbox's network namespace (step 13).
	Network cni.Networker
	// Cgroups creates container cgroups under the pod's (the kubelet
	// creates the pod's with EnsurePod and passes it as
	// SandboxConfig.CgroupParent).
	Cgroups cgroups.Manager
	// Handlers run containers for runtime classes other than the native
	// one (see sandbox/oci), keyed by SandboxConfig.RuntimeHandler.
	Handlers map[string]Handler
	// PauseAlways starts a pause process (PID 1 of a pod-wide PID
	// namespace) for every pod, not only those sharing their PID
	// namespace.
	PauseAlways bool
	Logger      *slog.Logger
	// Clock reads the time (time.Now when nil).
	Clock func() time.Time
	// Binary is re-executed for the supervisor and the container init
	// (/proc/self/exe when empty); its main must call Init first.
	Binary string
	// InitBinary, when set, is re-executed for the container init, the
	// exec helper and the Go pause instead of Binary: a small executable
	// whose main calls Init (cmd/podkit-init) starts containers ~3 ms
	// faster than a large binary (docs/benchmarks.md).
	InitBinary string
	// SupervisorIdleExit is how long the supervisor lingers with no
	// containers and no runtime connected (its default when zero).
	SupervisorIdleExit time.Duration
}

// Runtime is the native SandboxRunner.
type Runtime struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	sup  *supervisor.Client
	evts *fanout
	// stop ends the goroutine forwarding the supervisor's exits.
	stop context.CancelFunc
	done chan struct{}

	mu         sync.Mutex
	sandboxes  map[string]*sandboxRecord
	containers map[string]*containerRecord
	// inflight holds the starts in progress (see starting).
	inflight map[string]chan struct{}
	// busy serialises operations per sandbox or container ID.
	busy *keyLock
}

var (
	_ sandbox.SandboxRunner = (*Runtime)(nil)
	_ sandbox.Execer        = (*Runtime)(nil)
	_ sandbox.EventSource   = (*Runtime)(nil)
)

// New opens (or creates) the runtime state at cfg.Root, connects to the
// node's supervisor (starting it when none runs) and re-adopts the
// sandboxes and containers a previous runtime left there.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Root == "" {
		cfg.Root = DefaultRoot
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	for _, d := range []string{"sandboxes", "containers"} {
		if err := os.MkdirAll(filepath.Join(cfg.Root, d), 0o711); err != nil {
			return nil, fmt.Errorf("runtime root: %w", err)
		}
	}
	opts := []supervisor.Option{supervisor.WithLogger(cfg.Logger)}
	if cfg.Binary != "" {
		opts = append(opts, supervisor.WithBinary(cfg.Binary))
	}
	if cfg.SupervisorIdleExit > 0 {
		opts = append(opts, supervisor.WithIdleExit(cfg.SupervisorIdleExit))
	}
	sup, err := supervisor.Connect(ctx, cfg.Root, opts...)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	r := &Runtime{
		cfg: cfg, log: cfg.Logger, now: cfg.Clock, sup: sup, evts: newFanout(),
		sandboxes: map[string]*sandboxRecord{}, containers: map[string]*containerRecord{},
		inflight: map[string]chan struct{}{},
		busy:     newKeyLock(),
	}
	if err := r.load(ctx); err != nil {
		sup.Close()
		return nil, err
	}
	fctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = stop, make(chan struct{})
	go func() {
		defer close(r.done)
		r.forwardExits(fctx)
	}()
	return r, nil
}

// Close disconnects from the supervisor. Sandboxes and containers keep
// running; a new Runtime on the same Root adopts them.
func (r *Runtime) Close() error {
	r.stop()
	err := r.sup.Close()
	<-r.done
	r.evts.close()
	return err
}

// load re-adopts the records a previous runtime left.
func (r *Runtime) load(ctx context.Context) error {
	sbs, partial, err := loadRecords[sandboxRecord](r.cfg.Root, "sandboxes", "sandbox.json")
	if err != nil {
		return err
	}
	for _, p := range partial { // a crash between mkdir and the first record
		r.log.Warn("removing incomplete sandbox dir", "dir", p)
		r.cleanupSandboxDir(ctx, p)
	}
	for _, s := range sbs {
		r.sandboxes[s.ID] = s
	}
	cs, partial, err := loadRecords[containerRecord](r.cfg.Root, "containers", "container.json")
	if err != nil {
		return err
	}
	for _, p := range partial {
		r.log.Warn("removing incomplete container dir", "dir", p)
		unmountAll(filepath.Join(p, "rootfs"))
		os.RemoveAll(p)
	}
	for _, c := range cs {
		r.containers[c.ID] = c
	}
	// A runtime that died inside CreateTask may have left a task the
	// records do not know: remove it.
	tasks, err := r.sup.List(ctx)
	if err != nil {
		return fmt.Errorf("list supervisor tasks: %w", err)
	}
	for _, t := range tasks {
		if _, ok := r.containers[t.ID]; ok {
			continue
		}
		if sid, ok := strings.CutPrefix(t.ID, "pause-"); ok && r.sandboxes[sid] != nil {
			continue
		}
		r.log.Warn("removing a supervisor task no record knows", "task", t.ID)
		if err := r.sup.Delete(ctx, t.ID, supervisor.WithForce()); err != nil && !errors.Is(err, supervisor.ErrNotFound) {
			return fmt.Errorf("remove unknown task %s: %w", t.ID, err)
		}
	}
	return nil
}

func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

func (r *Runtime) sandboxDir(id string) string   { return filepath.Join(r.cfg.Root, "sandboxes", id) }
func (r *Runtime) containerDir(id string) string { return filepath.Join(r.cfg.Root, "containers", id) }

func (r *Runtime) getSandbox(id string) (*sandboxRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sandboxes[id]
	if !ok {
		return nil, fmt.Errorf("sandbox %q: %w", id, sandbox.ErrNotFound)
	}
	cp := *s
	return &cp, nil
}

func (r *Runtime) getContainer(id string) (*containerRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %q: %w", id, sandbox.ErrNotFound)
	}
	cp := *c
	return &cp, nil
}

func (r *Runtime) saveSandbox(s *sandboxRecord) error {
	if err := writeJSON(filepath.Join(r.sandboxDir(s.ID), "sandbox.json"), s); err != nil {
		return err
	}
	r.mu.Lock()
	cp := *s
	r.sandboxes[s.ID] = &cp
	r.mu.Unlock()
	return nil
}

func (r *Runtime) saveContainer(c *containerRecord) error {
	if err := writeJSON(filepath.Join(r.containerDir(c.ID), "container.json"), c); err != nil {
		return err
	}
	r.remember(c)
	return nil
}

// remember updates the in-memory copy of c without writing its record.
func (r *Runtime) remember(c *containerRecord) {
	r.mu.Lock()
	cp := *c
	r.containers[c.ID] = &cp
	r.mu.Unlock()
}

// containersOf lists the IDs of a sandbox's containers.
func (r *Runtime) containersOf(sandboxID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, c := range r.containers {
		if c.SandboxID == sandboxID {
			ids = append(ids, id)
		}
	}
	return ids
}

// List reports every sandbox and container.
func (r *Runtime) List(ctx context.Context) ([]*sandbox.Sandbox, []*sandbox.ContainerStatus, error) {
	r.mu.Lock()
	sids := make([]string, 0, len(r.sandboxes))
	for id := range r.sandboxes {
		sids = append(sids, id)
	}
	cids := make([]string, 0, len(r.containers))
	for id := range r.containers {
		cids = append(cids, id)
	}
	r.mu.Unlock()
	var sbs []*sandbox.Sandbox
	for _, id := range sids {
		s, err := r.getSandbox(id)
		if errors.Is(err, sandbox.ErrNotFound) {
			continue // removed meanwhile
		}
		sbs = append(sbs, s.public())
	}
	var cs []*sandbox.ContainerStatus
	for _, id := range cids {
		st, err := r.ContainerStatus(ctx, id)
		if errors.Is(err, sandbox.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		cs = append(cs, st)
	}
	return sbs, cs, nil
}
