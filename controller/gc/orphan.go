package gc

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// processAttemptToOrphan handles one owner deleted with the orphan
// finalizer: its dependents lose their reference to it, then the
// finalizer goes and the API server deletes the owner.
func (gc *GarbageCollector) processAttemptToOrphan(ctx context.Context) bool {
	owner, quit := gc.attemptToOrphan.Get()
	if quit {
		return false
	}
	defer gc.attemptToOrphan.Done(owner)
	if err := gc.orphan(ctx, owner); err != nil {
		if ctx.Err() == nil {
			gc.log.Debug("orphaning dependents failed", "owner", owner.getIdentity(), "err", err)
		}
		gc.attemptToOrphan.AddRateLimited(owner)
		return true
	}
	gc.attemptToOrphan.Forget(owner)
	return true
}

func (gc *GarbageCollector) orphan(ctx context.Context, owner *node) error {
	id := owner.getIdentity()
	// The live owner decides: if it is there but no longer asks for
	// orphaning (someone removed the finalizer), nothing is to be done. A
	// vanished owner still had its dependents orphaned as it asked.
	live, err := gc.getObject(ctx, id)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case live.UID == id.UID && (live.DeletionTimestamp == nil || !hasFinalizer(live, metav1.FinalizerOrphanDependents)):
		return nil
	}
	var errs []error
	for _, dep := range owner.getDependents() {
		if err := gc.removeOwnerReferences(ctx, dep.getIdentity(), id.UID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("orphaning dependents of %s: %w", id, err)
	}
	gc.log.Debug("dependents orphaned, removing finalizer", "owner", id)
	return gc.removeFinalizer(ctx, id, metav1.FinalizerOrphanDependents)
}
