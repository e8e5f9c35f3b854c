package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// Sentinel errors.
var (
	// ErrNotRegistered: Sync before Run has registered the node.
	ErrNotRegistered = errors.New("node not registered yet")
	// ErrAlreadyRunning: Run called twice.
	ErrAlreadyRunning = errors.New("node status controller already running")
)

// Controller registers a node and keeps its status and lease current.
type Controller struct {
	cfg        Config
	log        *slog.Logger
	thresholds map[string]threshold
	addresses  []corev1.NodeAddress
	running    atomic.Bool
	registered chan struct{}

	// syncMu serialises registration and status syncs (the kubelet's
	// syncNodeStatusMux) and guards what they share.
	syncMu       sync.Mutex
	isRegistered bool
	lastReport   time.Time
	pressure     pressureTracker

	// mu guards the last known node and pod CIDR, read by any goroutine.
	mu      sync.Mutex
	node    *corev1.Node
	podCIDR string

	// lease is the lease goroutine's own.
	lease *coordinationv1.Lease
}

// New checks cfg, fills its defaults and builds a controller; nothing is
// sent to the API server until Run.
func New(cfg Config) (*Controller, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	th, err := parseThresholds(cfg.EvictionHard)
	if err != nil {
		return nil, fmt.Errorf("nodestatus: %w", err)
	}
	c := &Controller{
		cfg:        cfg,
		log:        cfg.Logger,
		thresholds: th,
		registered: make(chan struct{}),
		pressure:   pressureTracker{th: th, period: max(cfg.PressureTransitionPeriod, 0), lastSeen: map[corev1.NodeConditionType]time.Time{}},
	}
	addrs := cfg.Addresses
	if addrs == nil {
		ip, err := DetectNodeIP("/proc")
		if err != nil {
			c.log.Warn("no InternalIP for the node; reporting its hostname only", "node", cfg.NodeName, "err", err)
		} else {
			addrs = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip.String()}}
		}
	}
	c.addresses = withHostname(addrs, cfg.Hostname)
	return c, nil
}

// Run registers the node (creating it, or reconciling an existing one as
// the kubelet does), posts its status, and then until ctx is done renews
// the node lease every RenewInterval and computes the status every
// StatusUpdateFrequency, posting it when it changed or
// StatusReportFrequency has passed. Failures are logged and retried with
// backoff; Run returns an error only when the node can never be
// registered (the API server rejects it as invalid), and nil when ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	if err := c.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.runLease(ctx)
	}()
	c.runStatus(ctx)
	wg.Wait()
	return nil
}

// Registered is closed once the node is registered and its first status
// is posted: from then on Node reports allocatable for admission. It is
// never closed when Run fails, so wait on Run's result too.
func (c *Controller) Registered() <-chan struct{} { return c.registered }

// Node returns a copy of the last known node (nil before registration).
func (c *Controller) Node() *corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil
	}
	return c.node.DeepCopy()
}

// PodCIDR returns the node's pod CIDR as last seen on the Node ("" while
// the control plane has not assigned one).
func (c *Controller) PodCIDR() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.podCIDR
}

// Sync computes the status now, without waiting for the next period (for
// instance after the image list changed), and posts it under the usual
// rule: when anything but heartbeats changed, or the report interval
// passed. Before Run has registered the node it returns ErrNotRegistered.
// OnPodCIDR may be called from it, so OnPodCIDR must not call Sync.
func (c *Controller) Sync(ctx context.Context) error {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	if !c.isRegistered {
		return fmt.Errorf("nodestatus: sync node %s: %w", c.cfg.NodeName, ErrNotRegistered)
	}
	return c.updateNodeStatus(ctx)
}

// runStatus syncs the status every StatusUpdateFrequency until ctx ends.
func (c *Controller) runStatus(ctx context.Context) {
	t := c.cfg.Clock.NewTicker(c.cfg.StatusUpdateFrequency)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("updating node status", "node", c.cfg.NodeName, "err", err)
		}
	}
}

// setNode records the last known node and learns its pod CIDR, calling
// OnPodCIDR when that changed.
func (c *Controller) setNode(node *corev1.Node) {
	cidr := node.Spec.PodCIDR
	if len(node.Spec.PodCIDRs) > 0 {
		cidr = node.Spec.PodCIDRs[0]
	}
	c.mu.Lock()
	c.node = node.DeepCopy()
	changed := cidr != "" && cidr != c.podCIDR
	if changed {
		c.podCIDR = cidr
	}
	c.mu.Unlock()
	if changed {
		c.log.Info("node pod CIDR", "node", c.cfg.NodeName, "podCIDR", cidr)
		if c.cfg.OnPodCIDR != nil {
			c.cfg.OnPodCIDR(cidr)
		}
	}
}

// sleep waits d on the controller's clock; false when ctx ended first.
func (c *Controller) sleep(ctx context.Context, d time.Duration) bool {
	t := c.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// backoff doubles d up to 7s, the kubelet's registration and lease cap.
func backoff(d time.Duration) time.Duration {
	return min(2*d, 7*time.Second)
}
