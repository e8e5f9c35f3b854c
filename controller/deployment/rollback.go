package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rollbackTo returns the revision an in-server rollback asks for
// (RollbackToAnnotation; 0 means the previous one), or nil. An unparsable
// request is ignored, as Kubernetes does.
func rollbackTo(d *appsv1.Deployment) *int64 {
	v, ok := d.Annotations[RollbackToAnnotation]
	if !ok || v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// rollback performs an in-server rollback request: the template of the
// ReplicaSet with the requested revision becomes the Deployment's (with
// its annotations, e.g. the change-cause), and the request is cleared.
// `kubectl rollout undo` does the same from the client with a patch.
func (dc *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.replicaSetsAndRevision(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	rev := *rollbackTo(d)
	if rev == 0 {
		if rev = lastRevision(all); rev == 0 {
			dc.recorder.Eventf(d, corev1.EventTypeWarning, EventRollbackRevisionNotFound, "Unable to find last revision.")
			return dc.clearRollback(ctx, d)
		}
	}
	for _, rs := range all {
		if rs == nil {
			continue
		}
		if v, err := Revision(rs); err != nil || v != rev {
			continue
		}
		if EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			dc.recorder.Eventf(d, corev1.EventTypeWarning, EventRollbackTemplateUnchanged,
				"The rollback revision contains the same template as current deployment %q", d.Name)
			return dc.clearRollback(ctx, d)
		}
		d.Spec.Template.ObjectMeta = *rs.Spec.Template.ObjectMeta.DeepCopy()
		d.Spec.Template.Labels = withoutLabel(d.Spec.Template.Labels, HashLabel)
		d.Spec.Template.Spec = *rs.Spec.Template.Spec.DeepCopy()
		setAnnotationsFrom(d, rs)
		if err := dc.clearRollback(ctx, d); err != nil {
			return err
		}
		dc.recorder.Eventf(d, corev1.EventTypeNormal, EventRollback, "Rolled back deployment %q to revision %d", d.Name, rev)
		return nil
	}
	dc.recorder.Eventf(d, corev1.EventTypeWarning, EventRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return dc.clearRollback(ctx, d)
}

// clearRollback removes the request and writes d (with any rollback).
func (dc *Controller) clearRollback(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, RollbackToAnnotation)
	if _, err := dc.ctx.Client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating deployment %s/%s after rollback: %w", d.Namespace, d.Name, err)
	}
	return nil
}
