package nodestatus

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels the kubelet sets itself and reconciles on an existing node.
const (
	labelBetaOS   = "beta.kubernetes.io/os"
	labelBetaArch = "beta.kubernetes.io/arch"
	// annotationControllerManagedAttach marks nodes whose volumes the
	// attach/detach controller manages, as every kubelet registers.
	annotationControllerManagedAttach = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// defaultLabels are the labels updateDefaultLabels reconciles.
var defaultLabels = []string{
	corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceTypeStable, corev1.LabelInstanceType,
	corev1.LabelOSStable, corev1.LabelArchStable, corev1.LabelWindowsBuild,
	labelBetaOS, labelBetaArch,
}

// initialNode is the node the kubelet registers: its labels, taints,
// pod CIDR and a full status.
func (c *Controller) initialNode(ctx context.Context, now time.Time) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: c.cfg.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname:   c.cfg.Hostname,
				corev1.LabelOSStable:   runtime.GOOS,
				corev1.LabelArchStable: runtime.GOARCH,
				labelBetaOS:            runtime.GOOS,
				labelBetaArch:          runtime.GOARCH,
			},
			Annotations: map[string]string{annotationControllerManagedAttach: "true"},
		},
		Spec: corev1.NodeSpec{Taints: append([]corev1.Taint(nil), c.cfg.Taints...)},
	}
	for k, v := range c.cfg.Labels {
		if cur, ok := node.Labels[k]; ok && cur != v {
			c.log.Warn("node label overrides the kubelet's", "label", k, "value", v, "default", cur)
		}
		node.Labels[k] = v
	}
	if c.cfg.PodCIDR != "" {
		node.Spec.PodCIDR, node.Spec.PodCIDRs = c.cfg.PodCIDR, []string{c.cfg.PodCIDR}
	}
	c.setNodeStatus(ctx, node, now)
	return node
}

// register creates the node, or reconciles an existing one, retrying
// with backoff (100ms doubling to 7s) until it succeeds, ctx ends, or the
// API server rejects the node as invalid. Then it posts the first status.
// syncMu is held per attempt, not across the waits, so Sync answers
// ErrNotRegistered meanwhile instead of blocking.
func (c *Controller) register(ctx context.Context) error {
	delay := 100 * time.Millisecond
	for {
		c.syncMu.Lock()
		err := c.tryRegister(ctx)
		if err == nil {
			c.isRegistered = true
		}
		c.syncMu.Unlock()
		if err == nil {
			break
		}
		if apierrors.IsInvalid(err) {
			return fmt.Errorf("nodestatus: registering node %s: %w", c.cfg.NodeName, err)
		}
		c.log.Error("registering node, will retry", "node", c.cfg.NodeName, "in", delay, "err", err)
		if !c.sleep(ctx, delay) {
			return ctx.Err()
		}
		delay = backoff(delay)
	}
	c.log.Info("registered node", "node", c.cfg.NodeName)
	for {
		err := c.Sync(ctx)
		if err == nil {
			break
		}
		c.log.Error("posting the first node status, will retry", "node", c.cfg.NodeName, "in", delay, "err", err)
		if !c.sleep(ctx, delay) {
			return ctx.Err()
		}
		delay = backoff(delay)
	}
	close(c.registered)
	return nil
}

// tryRegister is one attempt: create, or reconcile what exists.
func (c *Controller) tryRegister(ctx context.Context) error {
	nodes := c.cfg.Client.CoreV1().Nodes()
	node := c.initialNode(ctx, c.cfg.Clock.Now())
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		c.setNode(created)
		c.lastReport = c.cfg.Clock.Now()
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting the existing node: %w", err)
	}
	c.log.Info("node was previously registered", "node", c.cfg.NodeName)
	if c.reconcile(node, existing) {
		if existing, err = nodes.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("reconciling the existing node: %w", err)
		}
	}
	c.setNode(existing)
	return nil
}

// reconcile brings an existing node in line with the one the kubelet
// would register, as tryRegisterWithAPIServer does: the default labels
// (removed when now empty), the controller-managed-attach annotation, and
// the pod CIDR when the node has none (it cannot change once set). It
// reports whether existing changed.
func (c *Controller) reconcile(want, existing *corev1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, l := range defaultLabels {
		v, ok := want.Labels[l]
		if !ok {
			continue
		}
		if existing.Labels[l] != v {
			existing.Labels[l] = v
			changed = true
		}
		if existing.Labels[l] == "" {
			delete(existing.Labels, l)
		}
	}
	if existing.Annotations[annotationControllerManagedAttach] != "true" {
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		existing.Annotations[annotationControllerManagedAttach] = "true"
		changed = true
	}
	if c.cfg.PodCIDR != "" {
		switch {
		case existing.Spec.PodCIDR == "" && len(existing.Spec.PodCIDRs) == 0:
			existing.Spec.PodCIDR, existing.Spec.PodCIDRs = c.cfg.PodCIDR, []string{c.cfg.PodCIDR}
			changed = true
		case existing.Spec.PodCIDR != c.cfg.PodCIDR:
			c.log.Warn("the node already has another pod CIDR, which cannot change; using it",
				"node", c.cfg.NodeName, "podCIDR", existing.Spec.PodCIDR, "configured", c.cfg.PodCIDR)
		}
	}
	return changed
}
