package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaseUpdateRetries is the lease controller's maxUpdateRetries.
const leaseUpdateRetries = 5

// errNoOwner: the node's UID is not known yet, so a lease cannot be
// created with its owner reference.
var errNoOwner = errors.New("node UID unknown; not creating the lease without its owner")

// runLease renews the node lease every RenewInterval until ctx ends;
// after a failure it retries sooner, backing off from 200ms to 7s like
// the kubelet's lease controller.
func (c *Controller) runLease(ctx context.Context) {
	retry := 100 * time.Millisecond
	for {
		next := c.cfg.RenewInterval
		if err := c.renewLease(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			retry = backoff(retry)
			next = min(retry, c.cfg.RenewInterval)
			c.log.Error("renewing node lease", "node", c.cfg.NodeName, "retry in", next, "err", err)
		} else {
			retry = 100 * time.Millisecond
		}
		if !c.sleep(ctx, next) {
			return
		}
	}
}

// renewLease is one heartbeat: update the lease from the last copy
// (no GET, as the kubelet optimises), else get or create it and update.
func (c *Controller) renewLease(ctx context.Context) error {
	if c.lease != nil {
		err := c.updateLease(ctx, c.lease)
		if err == nil {
			return nil
		}
		c.log.Info("renewing the node lease from its last copy failed; reading it again", "node", c.cfg.NodeName, "err", err)
	}
	lease, created, err := c.ensureLease(ctx)
	if err != nil {
		return err
	}
	c.lease = lease
	if created {
		return nil
	}
	return c.updateLease(ctx, lease)
}

// ensureLease gets the lease, creating it when missing.
func (c *Controller) ensureLease(ctx context.Context) (*coordinationv1.Lease, bool, error) {
	leases := c.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lease, err := leases.Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	if err == nil {
		return lease, false, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("getting lease %s/%s: %w", corev1.NamespaceNodeLease, c.cfg.NodeName, err)
	}
	fresh, err := c.newLease(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	lease, err = leases.Create(ctx, fresh, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("creating lease %s/%s: %w", corev1.NamespaceNodeLease, c.cfg.NodeName, err)
	}
	return lease, true, nil
}

// updateLease renews base, refetching it after a conflict.
func (c *Controller) updateLease(ctx context.Context, base *coordinationv1.Lease) error {
	leases := c.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	var err error
	for i := 0; i < leaseUpdateRetries; i++ {
		next, _ := c.newLease(ctx, base) // an owner error does not block a renewal
		var lease *coordinationv1.Lease
		if lease, err = leases.Update(ctx, next, metav1.UpdateOptions{}); err == nil {
			c.lease = lease
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !apierrors.IsConflict(err) {
			continue
		}
		if base, _, err = c.ensureLease(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("updating lease %s/%s: %d attempts failed: %w", corev1.NamespaceNodeLease, c.cfg.NodeName, leaseUpdateRetries, err)
}

// newLease returns base (or a new lease) with this node as holder, the
// lease duration, renewTime now and the Node as owner, so the lease is
// garbage-collected with its node.
func (c *Controller) newLease(ctx context.Context, base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	var lease *coordinationv1.Lease
	if base == nil {
		holder, secs := c.cfg.NodeName, int32(c.cfg.LeaseDuration/time.Second)
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: c.cfg.NodeName, Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs},
		}
	} else {
		lease = base.DeepCopy()
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: c.cfg.Clock.Now()}
	if len(lease.OwnerReferences) > 0 {
		return lease, nil
	}
	node := c.Node()
	if node == nil || node.UID == "" {
		var err error
		if node, err = c.cfg.Client.CoreV1().Nodes().Get(ctx, c.cfg.NodeName, metav1.GetOptions{}); err != nil || node.UID == "" {
			return lease, fmt.Errorf("lease %s: %w (%v)", c.cfg.NodeName, errNoOwner, err)
		}
	}
	lease.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Node", Name: node.Name, UID: node.UID,
	}}
	return lease, nil
}
