package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"reflect"
	"sync"
	"time"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/internal/qos"
)

// Names of the tree, as the kubelet's cgroupfs driver names them.
const (
	DefaultRoot       = "/kubepods"
	BurstableTier     = "burstable"
	BestEffortTier    = "besteffort"
	podCgroupPrefix   = "pod"
	defaultPollPeriod = 10 * time.Millisecond
	unifiedMountpoint = "/sys/fs/cgroup"
	// hybridUnifiedMountpoint is where systemd mounts cgroup2 beside the
	// v1 hierarchies.
	hybridUnifiedMountpoint = "/sys/fs/cgroup/unified"
	defaultOOMLiveness      = time.Second
)

// ResourcePIDs names the node-allocatable process IDs, as the kubelet's
// pidlimit package does.
const ResourcePIDs corev1.ResourceName = "pid"

// Option customises a Tree; options reject bad values.
type Option func(*options) error

type options struct {
	root        string
	driver      driver
	allocatable corev1.ResourceList
	pod         PodOptions
	logger      *slog.Logger
	now         func() time.Time
	poll        time.Duration
}

// WithRoot sets the cgroup under which every pod lives (default
// /kubepods; the kubelet's --cgroup-root plus "kubepods").
func WithRoot(root string) Option {
	return func(o *options) error {
		c, err := cleanPath(root)
		if err != nil {
			return err
		}
		if c == "/" {
			return fmt.Errorf("the root cgroup cannot hold pods: %w", ErrInvalidPath)
		}
		o.root = c
		return nil
	}
}

// WithCgroupV1 uses cgroup v1 with the given hierarchy (nil: the mounted
// controllers, cgroup1.Default) instead of detecting the host's mode.
func WithCgroupV1(h cgroup1.Hierarchy) Option {
	return func(o *options) error {
		if h == nil {
			h = cgroup1.Default
		}
		o.driver = &v1{hierarchy: cachedHierarchy(h)}
		return nil
	}
}

// WithCgroupV2 uses cgroup v2 mounted at mountpoint ("" for
// /sys/fs/cgroup) instead of detecting the host's mode.
func WithCgroupV2(mountpoint string) Option {
	return func(o *options) error {
		if mountpoint == "" {
			mountpoint = unifiedMountpoint
		}
		o.driver = &v2{mountpoint: mountpoint, mkdir: mkdir, livenessPoll: defaultOOMLiveness}
		return nil
	}
}

// WithNodeAllocatable limits the root cgroup to the node's allocatable
// cpu (shares), memory and pids, like the kubelet's
// --enforce-node-allocatable=pods.
func WithNodeAllocatable(r corev1.ResourceList) Option {
	return func(o *options) error { o.allocatable = r.DeepCopy(); return nil }
}

// WithPodPidsLimit sets the kubelet's podPidsLimit (<= 0: unlimited).
func WithPodPidsLimit(n int64) Option {
	return func(o *options) error { o.pod.PidsLimit = n; return nil }
}

// WithCPUCFSQuota turns enforcement of CPU limits on or off (the kubelet's
// --cpu-cfs-quota, default on).
func WithCPUCFSQuota(on bool) Option {
	return func(o *options) error { o.pod.EnforceCPULimits = on; return nil }
}

// WithCPUCFSQuotaPeriod sets the CFS period (default 100 ms; the kernel
// accepts 1 ms to 1 s).
func WithCPUCFSQuotaPeriod(d time.Duration) Option {
	return func(o *options) error {
		if d < time.Millisecond || d > time.Second {
			return fmt.Errorf("CFS period %s is outside 1ms..1s", d)
		}
		o.pod.QuotaPeriod = uint64(d / time.Microsecond)
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithClock sets the clock stamping stats and events.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return errors.New("nil clock")
		}
		o.now = now
		return nil
	}
}

// WithPollInterval sets how often Remove checks that killed processes are
// gone and retries busy directories (default 10ms).
func WithPollInterval(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("poll interval %s must be positive", d)
		}
		o.poll = d
		return nil
	}
}

// Tree is the kubelet-style Manager: a QoS tree of pod cgroups with one
// child per container. It is safe for concurrent use.
type Tree struct {
	o options
	d driver

	mu   sync.Mutex
	pods map[types.UID]podEntry // pods this Tree ensured, for the tier values
	// tiers records what ensureTiers last wrote, so EnsurePod only touches
	// the tiers when their values change; UpdateQOS rewrites them all.
	tiersReady      bool
	burstableShares uint64
}

type podEntry struct {
	class    corev1.PodQOSClass
	milliCPU int64
	path     string
	// ensured are the resources EnsurePod last wrote to the pod's cgroup
	// (nil before): the kubelet ensures on every sync, and rewriting every
	// hierarchy each time cost more than the rest of a resync.
	ensured *specs.LinuxResources
}

var (
	_ Manager      = (*Tree)(nil)
	_ ProcessAdder = (*Tree)(nil)
	_ OOMWatcher   = (*Tree)(nil)
)

// New returns a Tree on the host's cgroup version (v2 when the unified
// hierarchy is the only one, v1 otherwise) unless an option picks one. It
// touches nothing until the first EnsurePod.
func New(opts ...Option) (*Tree, error) {
	o := options{
		root:   DefaultRoot,
		pod:    PodOptions{EnforceCPULimits: true, QuotaPeriod: QuotaPeriod},
		logger: slog.Default(),
		now:    time.Now,
		poll:   defaultPollPeriod,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("cgroups: %w", err)
		}
	}
	if o.driver == nil {
		switch cgroupsv3.Mode() {
		case cgroupsv3.Unified:
			o.driver = &v2{mountpoint: unifiedMountpoint, mkdir: mkdir, livenessPoll: defaultOOMLiveness}
		case cgroupsv3.Legacy:
			o.driver = &v1{hierarchy: cachedHierarchy(cgroup1.Default)}
		case cgroupsv3.Hybrid:
			o.driver = &v1{hierarchy: cachedHierarchy(cgroup1.Default), unified: hybridUnifiedMountpoint}
		default:
			return nil, fmt.Errorf("cgroups: no cgroup filesystem mounted: %w", ErrUnsupported)
		}
	}
	return &Tree{o: o, d: o.driver, pods: map[types.UID]podEntry{}}, nil
}

// Version is the cgroup version in use, 1 or 2.
func (t *Tree) Version() int { return t.d.version() }

// Root is the cgroup holding every pod.
func (t *Tree) Root() string { return t.o.root }

// Dirs lists the directories of the cgroup at path, one per hierarchy.
func (t *Tree) Dirs(path string) []string { return t.d.dirs(path) }

// PodPath is where pod's cgroup lives.
func (t *Tree) PodPath(pod *corev1.Pod) string {
	name := podCgroupPrefix + string(pod.UID)
	switch qos.PodQOSClass(pod) {
	case corev1.PodQOSGuaranteed:
		return path.Join(t.o.root, name)
	case corev1.PodQOSBurstable:
		return path.Join(t.o.root, BurstableTier, name)
	default:
		return path.Join(t.o.root, BestEffortTier, name)
	}
}

// ContainerResources maps c as the kubelet would for this host (see the
// package function ContainerResources).
func (t *Tree) ContainerResources(c *corev1.Container) *specs.LinuxResources {
	return ContainerResources(c, ContainerOptions{
		EnforceCPULimits: t.o.pod.EnforceCPULimits,
		QuotaPeriod:      t.o.pod.QuotaPeriod,
		CgroupV2:         t.d.version() == 2,
		SwapController:   t.d.swapAccounting(t.o.root),
	})
}

// EnsurePod creates or updates the pod's cgroup with PodResources and
// first brings the root and the QoS tiers to the values the kubelet keeps
// on them, this pod included.
func (t *Tree) EnsurePod(ctx context.Context, pod *corev1.Pod) (string, error) {
	if pod == nil || pod.UID == "" {
		return "", fmt.Errorf("cgroups: pod without a UID: %w", ErrInvalidPath)
	}
	if err := validName(podCgroupPrefix + string(pod.UID)); err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p := t.PodPath(pod)
	res := PodResources(pod, t.o.pod)
	t.mu.Lock()
	prev := t.pods[pod.UID]
	e := podEntry{class: qos.PodQOSClass(pod), milliCPU: milliCPURequest(pod), path: p}
	if prev.path == p {
		e.ensured = prev.ensured
	}
	t.pods[pod.UID] = e
	err := t.ensureTiers()
	t.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("cgroups: pod %s: %w", pod.UID, err)
	}
	if e.ensured != nil && reflect.DeepEqual(e.ensured, res) && t.exists(p) {
		return p, nil // as written last time
	}
	// The pod's own cgroup outside t.mu: pods starting together create
	// theirs in parallel instead of queueing behind each other's mkdirs
	// in every hierarchy (only the shared tiers need the lock).
	if err := t.d.ensure(p, res); err != nil {
		return "", fmt.Errorf("cgroups: pod %s: %w", pod.UID, err)
	}
	t.mu.Lock()
	if cur, ok := t.pods[pod.UID]; ok && cur.path == p {
		cur.ensured = res
		t.pods[pod.UID] = cur
	}
	t.mu.Unlock()
	t.o.logger.Debug("pod cgroup ready", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "path", p)
	return p, nil
}

// exists says the cgroup at p still has its directory (in the first
// hierarchy: one stat).
func (t *Tree) exists(p string) bool {
	dirs := t.d.dirs(p)
	return len(dirs) > 0 && dirExists(dirs[0])
}

// UpdateQOS makes pods the complete set of active pods (the kubelet's
// UpdateQOSCgroups over its active pods) and rewrites the tier values.
// It does not touch the pods' own cgroups.
func (t *Tree) UpdateQOS(ctx context.Context, pods []*corev1.Pod) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pods = make(map[types.UID]podEntry, len(pods))
	for _, p := range pods {
		t.pods[p.UID] = podEntry{class: qos.PodQOSClass(p), milliCPU: milliCPURequest(p), path: t.PodPath(p)}
	}
	t.tiersReady = false
	if err := t.ensureTiers(); err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// ensureTiers writes the root's node-allocatable values and the tiers'
// cpu shares: the minimum for besteffort, the burstable pods' requests for
// burstable. Callers hold t.mu.
func (t *Tree) ensureTiers() error {
	var burstable int64
	for _, p := range t.pods {
		if p.class == corev1.PodQOSBurstable {
			burstable += p.milliCPU
		}
	}
	bs, es := MilliCPUToShares(burstable), uint64(MinShares)
	if t.tiersReady && bs == t.burstableShares {
		return nil
	}
	if !t.tiersReady {
		if err := t.d.ensure(t.o.root, t.rootResources()); err != nil {
			return err
		}
		if err := t.d.ensure(path.Join(t.o.root, BestEffortTier), &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &es}}); err != nil {
			return err
		}
	}
	t.tiersReady = false
	if err := t.d.ensure(path.Join(t.o.root, BurstableTier), &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: &bs}}); err != nil {
		return err
	}
	t.tiersReady, t.burstableShares = true, bs
	return nil
}

func (t *Tree) rootResources() *specs.LinuxResources {
	a := t.o.allocatable
	if len(a) == 0 {
		return nil
	}
	r := &specs.LinuxResources{}
	if q, ok := a[corev1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		r.CPU = &specs.LinuxCPU{Shares: &s}
	}
	if q, ok := a[corev1.ResourceMemory]; ok && q.Value() > 0 {
		m := q.Value()
		r.Memory = &specs.LinuxMemory{Limit: &m}
	}
	if q, ok := a[ResourcePIDs]; ok && q.Value() > 0 {
		n := q.Value()
		r.Pids = &specs.LinuxPids{Limit: &n}
	}
	return r
}

// EnsureContainer creates or updates parent/name with r.
func (t *Tree) EnsureContainer(ctx context.Context, parent, name string, r *specs.LinuxResources) (string, error) {
	parent, err := t.inside(parent)
	if err != nil {
		return "", err
	}
	if err := validName(name); err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p := path.Join(parent, name)
	if err := t.d.ensure(p, r); err != nil {
		return "", fmt.Errorf("cgroups: container %s: %w", name, err)
	}
	return p, nil
}

// Stats reads the usage of the cgroup at path.
func (t *Tree) Stats(ctx context.Context, p string) (*Stats, error) {
	p, err := t.inside(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := t.d.stats(p)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	s.Time = t.o.now()
	return s, nil
}

// AddProcess moves pid into the cgroup at path.
func (t *Tree) AddProcess(ctx context.Context, p string, pid int) error {
	p, err := t.inside(p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := t.d.addProc(p, pid); err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	return nil
}

// Processes lists the processes in the cgroup at path and its
// descendants.
func (t *Tree) Processes(ctx context.Context, p string) ([]int, error) {
	p, err := t.inside(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pids, err := t.d.procs(p)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return pids, nil
}

// WatchOOM reports OOM kills in the cgroup at path until ctx ends or the
// cgroup is removed.
func (t *Tree) WatchOOM(ctx context.Context, p string) (<-chan OOMEvent, error) {
	p, err := t.inside(p)
	if err != nil {
		return nil, err
	}
	ch, err := t.d.watchOOM(ctx, p, t.o.now)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	return ch, nil
}

// inside validates p and checks it is the root or below it.
func (t *Tree) inside(p string) (string, error) {
	c, err := cleanPath(p)
	if err != nil {
		return "", fmt.Errorf("cgroups: %w", err)
	}
	if !within(t.o.root, c) {
		return "", fmt.Errorf("cgroups: %s is not under %s: %w", c, t.o.root, ErrOutsideRoot)
	}
	return c, nil
}
