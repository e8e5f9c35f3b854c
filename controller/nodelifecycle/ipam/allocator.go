package ipam

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/controller"
)

// Name is the controller's name in the controller manager.
const Name = "nodeipam"

// EventSource is the component named in the events the allocator records.
const EventSource = "cidrAllocator"

// Defaults.
const (
	DefaultClusterCIDR      = "10.244.0.0/16"
	DefaultNodeMaskSizeIPv4 = 24
	DefaultNodeMaskSizeIPv6 = 64
)

// Config configures the allocator; the zero value allocates /24s from
// 10.244.0.0/16.
type Config struct {
	// ClusterCIDRs are the pod address ranges, at most one per IP family
	// (two for dual stack). Nil means DefaultClusterCIDR.
	ClusterCIDRs []netip.Prefix
	// NodeMaskSizeIPv4 and NodeMaskSizeIPv6 size each node's subnet; zero
	// means the defaults.
	NodeMaskSizeIPv4, NodeMaskSizeIPv6 int
}

// Allocator assigns PodCIDRs to nodes.
type Allocator struct {
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	sets     []*CIDRSet
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
	log      *slog.Logger

	mu sync.Mutex
	// owned holds the subnets each node has (observed on the node) or was
	// given (patch sent, not yet observed).
	owned map[string][]netip.Prefix
}

var _ controller.Controller = (*Allocator)(nil)

// New returns the allocator, registering a node informer in c.Informers.
func New(c *controller.Context, cfg Config) (*Allocator, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("ipam: %w", err)
	}
	sets, err := newSets(cfg)
	if err != nil {
		return nil, err
	}
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	rec := c.Recorder(EventSource)
	inf := c.Informers.Core().V1().Nodes()
	a := &Allocator{
		client: c.Client, nodes: inf.Lister(), synced: inf.Informer().HasSynced, sets: sets,
		queue: controller.NewQueue[string]("nodeipam"), recorder: rec, log: log,
		owned: map[string][]netip.Prefix{},
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.nodeChanged,
		UpdateFunc: func(_, cur any) { a.nodeChanged(cur) },
		DeleteFunc: a.nodeDeleted,
	}); err != nil {
		return nil, fmt.Errorf("ipam: adding node handler: %w", err)
	}
	return a, nil
}

func newSets(cfg Config) ([]*CIDRSet, error) {
	cidrs := cfg.ClusterCIDRs
	if cidrs == nil {
		cidrs = []netip.Prefix{netip.MustParsePrefix(DefaultClusterCIDR)}
	}
	if len(cidrs) == 0 || len(cidrs) > 2 {
		return nil, fmt.Errorf("ipam: want one or two cluster CIDRs, got %d", len(cidrs))
	}
	if len(cidrs) == 2 && cidrs[0].Addr().Is4() == cidrs[1].Addr().Is4() {
		return nil, fmt.Errorf("ipam: two cluster CIDRs %s and %s must be of different IP families", cidrs[0], cidrs[1])
	}
	var sets []*CIDRSet
	for _, p := range cidrs {
		mask := cfg.NodeMaskSizeIPv4
		if mask == 0 {
			mask = DefaultNodeMaskSizeIPv4
		}
		if !p.Addr().Is4() {
			mask = cfg.NodeMaskSizeIPv6
			if mask == 0 {
				mask = DefaultNodeMaskSizeIPv6
			}
		}
		s, err := NewCIDRSet(p, mask)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	return sets, nil
}

// Name implements controller.Controller.
func (a *Allocator) Name() string { return Name }

// Run rebuilds the bitmap from the nodes that have subnets, then allocates
// for the others.
func (a *Allocator) Run(ctx context.Context, workers int) error {
	defer a.queue.ShutDown()
	if err := controller.WaitForCacheSync(ctx, Name, a.synced); err != nil {
		return err
	}
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("ipam: listing nodes: %w", err)
	}
	for _, n := range nodes {
		a.observe(n)
	}
	for _, n := range nodes {
		if len(nodeCIDRs(n)) == 0 {
			a.queue.Add(n.Name)
		}
	}
	a.log.Debug("node CIDRs rebuilt", "nodes", len(nodes), "used", a.sets[0].Used())
	controller.RunWorkers(ctx, Name, workers, a.queue, a.sync, a.log)
	return nil
}

func (a *Allocator) nodeChanged(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if len(nodeCIDRs(n)) > 0 {
		a.observe(n)
		return
	}
	a.queue.Add(n.Name)
}

func (a *Allocator) nodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	a.mu.Lock()
	cidrs, ok := a.owned[n.Name]
	delete(a.owned, n.Name)
	a.mu.Unlock()
	if !ok {
		cidrs = nodeCIDRs(n)
	}
	if len(cidrs) == 0 {
		return
	}
	a.release(cidrs)
	a.log.Debug("released node CIDRs", "node", n.Name, "cidrs", cidrs)
	// A node waiting for a subnet may get this one.
	a.requeueWaiting()
}

// observe records the subnets a node has.
func (a *Allocator) observe(n *corev1.Node) {
	cidrs := nodeCIDRs(n)
	a.mu.Lock()
	prev, had := a.owned[n.Name]
	a.owned[n.Name] = cidrs
	a.mu.Unlock()
	if had && !slices.Equal(prev, cidrs) {
		// Our pending allocation lost to another writer: give it back.
		a.release(prev)
	}
	for _, p := range cidrs {
		for _, s := range a.sets {
			if !s.Contains(p) {
				continue
			}
			if _, err := s.Occupy(p); err != nil {
				a.log.Warn("node CIDR not usable", "node", n.Name, "cidr", p, "err", err)
			}
		}
	}
}

func (a *Allocator) release(cidrs []netip.Prefix) {
	for _, p := range cidrs {
		for _, s := range a.sets {
			if s.Contains(p) {
				_ = s.Release(p)
			}
		}
	}
}

func (a *Allocator) requeueWaiting() {
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, n := range nodes {
		if len(nodeCIDRs(n)) == 0 {
			a.queue.Add(n.Name)
		}
	}
}

// sync gives one node its subnets.
func (a *Allocator) sync(ctx context.Context, name string) error {
	n, err := a.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ipam: getting node %s: %w", name, err)
	}
	if len(nodeCIDRs(n)) > 0 {
		a.observe(n)
		return nil
	}
	cidrs, err := a.allocate(name)
	if err != nil {
		a.recorder.Eventf(n, corev1.EventTypeNormal, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable", name)
		return err
	}
	if err := a.patch(ctx, n, cidrs); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// The node is gone, or got subnets some other way: drop ours and
			// look again.
			a.forget(name, cidrs)
			if apierrors.IsNotFound(err) {
				return nil
			}
		}
		return fmt.Errorf("ipam: assigning %v to node %s: %w", cidrs, name, err)
	}
	a.log.Debug("assigned node CIDRs", "node", name, "cidrs", cidrs)
	return nil
}

// allocate returns the subnets pending for the node, or new ones.
func (a *Allocator) allocate(name string) ([]netip.Prefix, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cidrs, ok := a.owned[name]; ok && len(cidrs) > 0 {
		return cidrs, nil
	}
	var cidrs []netip.Prefix
	for _, s := range a.sets {
		p, err := s.AllocateNext()
		if err != nil {
			for _, q := range cidrs {
				a.releaseLocked(q)
			}
			return nil, fmt.Errorf("ipam: node %s: %w", name, err)
		}
		cidrs = append(cidrs, p)
	}
	a.owned[name] = cidrs
	return cidrs, nil
}

func (a *Allocator) releaseLocked(p netip.Prefix) {
	for _, s := range a.sets {
		if s.Contains(p) {
			_ = s.Release(p)
		}
	}
}

// forget drops a pending allocation that did not reach the node.
func (a *Allocator) forget(name string, cidrs []netip.Prefix) {
	a.mu.Lock()
	if cur, ok := a.owned[name]; ok && slices.Equal(cur, cidrs) {
		delete(a.owned, name)
	}
	a.mu.Unlock()
	a.release(cidrs)
}

// patch writes the subnets into the node's spec. No resourceVersion is
// needed: the API server lets podCIDRs go only from unset to set, so the
// patch either sets ours, changes nothing (ours already there), or is
// rejected as invalid (the node has others).
func (a *Allocator) patch(ctx context.Context, n *corev1.Node, cidrs []netip.Prefix) error {
	strs := make([]string, len(cidrs))
	for i, p := range cidrs {
		strs[i] = p.String()
	}
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": strs[0], "podCIDRs": strs}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// nodeCIDRs returns the subnets of a node (podCIDRs, else podCIDR).
func nodeCIDRs(n *corev1.Node) []netip.Prefix {
	strs := n.Spec.PodCIDRs
	if len(strs) == 0 && n.Spec.PodCIDR != "" {
		strs = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range strs {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
