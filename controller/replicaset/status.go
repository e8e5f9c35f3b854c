package replicaset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podkit/podkit/controller"
)

// Reasons of the ReplicaFailure condition.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// calculateStatus derives the status of rs from its active pods and the
// outcome of the last manageReplicas.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if controller.IsPodReady(p) {
			ready++
			if controller.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := GetCondition(st, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ReasonFailedCreate
		if len(pods) > int(replicas(rs)) {
			reason = ReasonFailedDelete
		}
		SetCondition(&st, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: failureMessage(manageErr),
		})
	case manageErr == nil && failure != nil:
		RemoveCondition(&st, appsv1.ReplicaSetReplicaFailure)
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	return st
}

// updateStatus writes status (with observedGeneration) unless nothing
// changed; on a conflict it retries once on a fresh copy.
func (rc *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	status.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	client := rc.ctx.Client.AppsV1().ReplicaSets(rs.Namespace)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			fresh, gerr := client.Get(ctx, rs.Name, metav1.GetOptions{})
			if gerr != nil {
				return nil, fmt.Errorf("reading replicaset %s/%s for its status: %w", rs.Namespace, rs.Name, gerr)
			}
			rs = fresh
			status.ObservedGeneration = rs.Generation
		}
		rs.Status = status
		var updated *appsv1.ReplicaSet
		if updated, err = client.UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err == nil {
			return updated, nil
		}
	}
	return nil, fmt.Errorf("updating status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
}

// GetCondition returns the condition of type t, or nil.
func GetCondition(st appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// SetCondition adds c, replacing a condition of its type; an unchanged
// status and reason keep the old transition time.
func SetCondition(st *appsv1.ReplicaSetStatus, c appsv1.ReplicaSetCondition) {
	if cur := GetCondition(*st, c.Type); cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	RemoveCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

// RemoveCondition drops the condition of type t.
func RemoveCondition(st *appsv1.ReplicaSetStatus, t appsv1.ReplicaSetConditionType) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

// failureMessage is the API server's message when err carries one (what
// Kubernetes shows, e.g. `pods "web-x" is forbidden: exceeded quota: …`),
// else err's text.
func failureMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}
