package nodestatus

import (
	"context"
	"fmt"
	"runtime"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusUpdateRetries is the kubelet's nodeStatusUpdateRetry.
const statusUpdateRetries = 5

// updateNodeStatus reads the node, computes its status and posts it
// through the status subresource when it changed (heartbeats aside), the
// pod CIDR changed, or StatusReportFrequency has passed since the last
// post; conflicts are retried on a fresh read. syncMu must be held.
func (c *Controller) updateNodeStatus(ctx context.Context) error {
	var err error
	for i := 0; i < statusUpdateRetries; i++ {
		if err = c.tryUpdateNodeStatus(ctx); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !apierrors.IsConflict(err) {
			c.log.Warn("updating node status, will retry", "node", c.cfg.NodeName, "attempt", i+1, "err", err)
		}
	}
	return fmt.Errorf("nodestatus: update status of node %s: %d attempts failed: %w", c.cfg.NodeName, statusUpdateRetries, err)
}

func (c *Controller) tryUpdateNodeStatus(ctx context.Context) error {
	nodes := c.cfg.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted under us (kubectl delete node): register it again
		// rather than failing every period until a restart.
		c.log.Warn("node object deleted; registering it again", "node", c.cfg.NodeName)
		if err := c.tryRegister(ctx); err != nil {
			return fmt.Errorf("registering deleted node %s again: %w", c.cfg.NodeName, err)
		}
		node, err = nodes.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("getting node %s: %w", c.cfg.NodeName, err)
	}
	if fixRequiredLabels(node) {
		// Someone removed the OS or architecture label; the kubelet puts
		// it back. Labels are metadata: the main resource carries them.
		if node, err = nodes.Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("restoring the os and arch labels of node %s: %w", c.cfg.NodeName, err)
		}
	}
	oldCIDR := c.PodCIDR()
	original := node.DeepCopy()
	now := c.cfg.Clock.Now()
	c.setNodeStatus(ctx, node, now)
	cidrChanged := node.Spec.PodCIDR != "" && node.Spec.PodCIDR != oldCIDR
	if now.Before(c.lastReport.Add(c.cfg.StatusReportFrequency)) && !cidrChanged && !statusChanged(&original.Status, &node.Status) {
		c.setNode(node)
		return nil
	}
	updated, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("posting the status of node %s: %w", c.cfg.NodeName, err)
	}
	c.lastReport = now
	c.setNode(updated)
	return nil
}

// fixRequiredLabels restores kubernetes.io/os and kubernetes.io/arch,
// reporting whether it changed anything.
func fixRequiredLabels(node *corev1.Node) bool {
	changed := false
	for k, v := range map[string]string{corev1.LabelOSStable: runtime.GOOS, corev1.LabelArchStable: runtime.GOARCH} {
		if node.Labels[k] != v {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[k] = v
			changed = true
		}
	}
	return changed
}

// statusChanged compares two statuses, ignoring the conditions'
// heartbeat times (the kubelet's nodeStatusHasChanged).
func statusChanged(old, cur *corev1.NodeStatus) bool {
	if conditionsChanged(old.Conditions, cur.Conditions) {
		return true
	}
	a, b := old.DeepCopy(), cur.DeepCopy()
	a.Conditions, b.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(a, b)
}

func conditionsChanged(old, cur []corev1.NodeCondition) bool {
	if len(old) != len(cur) {
		return true
	}
	a := append([]corev1.NodeCondition(nil), old...)
	b := append([]corev1.NodeCondition(nil), cur...)
	sort.SliceStable(a, func(i, j int) bool { return a[i].Type < a[j].Type })
	sort.SliceStable(b, func(i, j int) bool { return b[i].Type < b[j].Type })
	for i := range a {
		a[i].LastHeartbeatTime, b[i].LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !equality.Semantic.DeepEqual(a[i], b[i]) {
			return true
		}
	}
	return false
}
