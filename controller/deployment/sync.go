package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/podkit/podkit/controller"
)

// sync converges the Deployment with key.
func (dc *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := dc.dLister.Deployments(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading deployment %s: %w", key, err)
	}
	d := cached.DeepCopy()

	if d.Spec.Selector == nil || (len(d.Spec.Selector.MatchLabels) == 0 && len(d.Spec.Selector.MatchExpressions) == 0) {
		dc.recorder.Eventf(d, corev1.EventTypeWarning, EventSelectingAll, "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err := dc.ctx.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
			return err
		}
		return nil
	}
	rsList, err := dc.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS, oldRSs, err := dc.replicaSetsAndRevision(ctx, d, rsList, false)
		if err != nil {
			return err
		}
		return dc.syncStatus(ctx, append(oldRSs, newRS), newRS, d)
	}
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return dc.syncScale(ctx, d, rsList)
	}
	if rollbackTo(d) != nil {
		return dc.rollback(ctx, d, rsList)
	}
	scaling, err := dc.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return dc.syncScale(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return dc.rolloutRecreate(ctx, d, rsList)
	case appsv1.RollingUpdateDeploymentStrategyType, "":
		return dc.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("deployment %s: unknown strategy type %q", key, d.Spec.Strategy.Type)
}

// claimReplicaSets returns the ReplicaSets the Deployment owns after
// adopting matching orphans and releasing owned ones that stopped matching.
func (dc *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has an invalid selector: %w", d.Namespace, d.Name, err)
	}
	candidates, err := controller.ByControllerUID[*appsv1.ReplicaSet](dc.rsIndexer, string(d.UID), d.Namespace)
	if err != nil {
		return nil, err
	}
	rm := &controller.RefManager{
		Controller: d, Kind: Kind, Selector: selector,
		CanAdopt: controller.RecheckDeletionTimestamp(controller.FreshUID(d.UID, func(ctx context.Context) (metav1.Object, error) {
			return dc.ctx.Client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		})),
	}
	return rm.ClaimReplicaSets(ctx, dc.ctx.Client, candidates)
}

// replicaSetsAndRevision splits rsList into the new ReplicaSet (created
// when create is set and none exists) and the old ones, bringing the
// revision annotations of the new one and of the Deployment up to date.
func (dc *Controller) replicaSetsAndRevision(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := FindOldReplicaSets(d, rsList)
	newRS, err := dc.newReplicaSet(ctx, d, rsList, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

// newReplicaSet returns the ReplicaSet of the current template (see
// replicaSetsAndRevision).
func (dc *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rsList, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := FindNewReplicaSet(d, rsList)
	newRevision := strconv.FormatInt(maxRevision(old)+1, 10)
	now := dc.ctx.Clock.Now()
	rsClient := dc.ctx.Client.AppsV1().ReplicaSets(d.Namespace)

	if existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := SetNewReplicaSetAnnotations(d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := rsClient.Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("updating replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			return updated, nil
		}
		if err := dc.setDeploymentRevision(ctx, d, rs.Annotations[RevisionAnnotation]); err != nil {
			return nil, err
		}
		if hasProgressDeadline(d) && GetCondition(d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewReplicaSet,
				fmt.Sprintf("Found new replica set %q", rs.Name), now))
			if err := dc.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(template.Labels, HashLabel, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, HashLabel, hash)
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			// Deterministic, so a second attempt finds the first one.
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*controller.OwnerRef(d, Kind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: selector, Template: template},
	}
	replicas, err := NewRSNewReplicas(d, append(old, rs), rs)
	if err != nil {
		return nil, err
	}
	rs.Spec.Replicas = &replicas
	SetNewReplicaSetAnnotations(d, rs, newRevision, false)

	created, err := rsClient.Create(ctx, rs, metav1.CreateOptions{})
	alreadyExisted := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExisted = true
		live, gerr := rsClient.Get(ctx, rs.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, fmt.Errorf("reading existing replicaset %s/%s: %w", rs.Namespace, rs.Name, gerr)
		}
		if ref := metav1.GetControllerOf(live); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&d.Spec.Template, &live.Spec.Template) {
			// Ours, created by an earlier sync our cache has not seen yet.
			created = live
			break
		}
		// A hash collision: another template owns the name. Count it so
		// the next sync hashes to a different name.
		before := int32(0)
		if d.Status.CollisionCount != nil {
			before = *d.Status.CollisionCount
		}
		next := before + 1
		d.Status.CollisionCount = &next
		if uerr := dc.updateStatus(ctx, d); uerr == nil {
			dc.log.Info("hash collision, bumping collisionCount", "deployment", d.Namespace+"/"+d.Name, "from", before, "to", next)
		}
		return nil, fmt.Errorf("replicaset name %s/%s collides with another template: %w", rs.Namespace, rs.Name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg, now))
			_ = dc.updateStatus(ctx, d) // the create error is the one to report
		}
		dc.recorder.Event(d, corev1.EventTypeWarning, EventReplicaSetCreateError, msg)
		return nil, fmt.Errorf("creating replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if !alreadyExisted && replicas > 0 {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, EventScalingReplicaSet, "Scaled up replica set %s from 0 to %d", created.Name, replicas)
	}
	if err := dc.setDeploymentRevision(ctx, d, newRevision); err != nil {
		return nil, err
	}
	if !alreadyExisted && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewReplicaSetCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), now))
		if err := dc.updateStatus(ctx, d); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// setDeploymentRevision records revision in the Deployment's revision
// annotation. Kubernetes writes it with the status update (its status
// strategy keeps annotations); podkit's status subresource keeps only the
// status, so the annotation goes in a metadata-only merge patch, which
// does not change the generation.
func (dc *Controller) setDeploymentRevision(ctx context.Context, d *appsv1.Deployment, revision string) error {
	if revision == "" || d.Annotations[RevisionAnnotation] == revision {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RevisionAnnotation: revision},
	}})
	updated, err := dc.ctx.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("recording revision %s on deployment %s/%s: %w", revision, d.Namespace, d.Name, err)
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// updateStatus writes d.Status and keeps d's resourceVersion current.
func (dc *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) error {
	updated, err := dc.ctx.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// isScalingEvent reports whether spec.replicas differs from what an active
// ReplicaSet last saw (its desired-replicas annotation): then the
// Deployment is resized proportionally instead of rolled.
func (dc *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := dc.replicaSetsAndRevision(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeReplicaSets(append(old, newRS)) {
		if want, ok := desiredReplicasAnnotation(rs); ok && want != desired(d) {
			return true, nil
		}
	}
	return false, nil
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (Unknown), so time spent paused never counts against the
// progress deadline.
func (dc *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cond := GetCondition(d.Status, appsv1.DeploymentProgressing)
	if cond != nil && cond.Reason == ReasonProgressDeadlineExceeded {
		return nil
	}
	pausedRecorded := cond != nil && cond.Reason == ReasonDeploymentPaused
	now := dc.ctx.Clock.Now()
	switch {
	case d.Spec.Paused && !pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentPaused, conditionMessageDeploymentPaused, now))
	case !d.Spec.Paused && pausedRecorded:
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonDeploymentResumed, conditionMessageResumed, now))
	default:
		return nil
	}
	return dc.updateStatus(ctx, d)
}

// syncStatus writes the status computed from the ReplicaSets if it changed.
func (dc *Controller) syncStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := calculateStatus(all, newRS, d, dc.ctx.Clock.Now())
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	return dc.updateStatus(ctx, d)
}
