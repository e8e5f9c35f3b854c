package deployment

import (
	"fmt"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolveFenceposts turns maxSurge and maxUnavailable (absolute numbers or
// percentages of desired) into replica counts: a surge percentage rounds
// up, an unavailable percentage rounds down, and if both end at zero
// maxUnavailable becomes 1 so that a rollout can always make progress
// (validation forbids both zero, but rounding down can produce it).
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	zero := intstr.FromInt32(0)
	s, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxSurge, zero), int(desired), true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(maxUnavailable, zero), int(desired), false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return int32(s), int32(u), nil
}

// desired is the Deployment's spec.replicas (1 when unset, the API default).
func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.Type == ""
}

func rollingParams(d *appsv1.Deployment) (surge, unavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	// The API defaults both to 25%.
	q := intstr.FromString("25%")
	return &q, &q
}

// MaxSurge is how many pods above spec.replicas a rolling update may run
// (0 for Recreate). Invalid values count as 0; validation refuses them.
func MaxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _, err := ResolveFenceposts(s, u, desired(d))
	if err != nil {
		return 0
	}
	return surge
}

// MaxUnavailable is how many of spec.replicas may be unavailable during a
// rolling update, never more than spec.replicas (0 for Recreate or zero
// replicas).
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || desired(d) == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable, err := ResolveFenceposts(s, u, desired(d))
	if err != nil {
		return 0
	}
	return min(unavailable, desired(d))
}

// NewRSNewReplicas is the size the new ReplicaSet may grow to now: for
// RollingUpdate as far as the surge allows (all ReplicaSets together at
// most spec.replicas+maxSurge) but not beyond spec.replicas; for Recreate
// spec.replicas at once.
func NewRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return desired(d), nil
	case appsv1.RollingUpdateDeploymentStrategyType, "":
		s, _ := rollingParams(d)
		surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, intstr.FromInt32(0)), int(desired(d)), true)
		if err != nil {
			return 0, fmt.Errorf("deployment %s/%s maxSurge: %w", d.Namespace, d.Name, err)
		}
		current := replicaSum(all)
		maxTotal := desired(d) + int32(surge)
		if current >= maxTotal {
			return specReplicas(newRS), nil
		}
		up := min(maxTotal-current, desired(d)-specReplicas(newRS))
		return specReplicas(newRS) + up, nil
	}
	return 0, fmt.Errorf("deployment %s/%s: unknown strategy type %q", d.Namespace, d.Name, d.Spec.Strategy.Type)
}

// GetProportion is the share of a scaling of the whole Deployment by
// toAdd replicas (negative: removal) that rs takes, given that added
// replicas were already distributed to larger ReplicaSets. The share is
// rs's fraction of the Deployment's size before the scaling (from its
// max-replicas annotation), bounded by what is left to distribute.
func GetProportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || specReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := replicaSetFraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// replicaSetFraction is how many replicas rs gains (or loses) if the
// Deployment's max size moves from the annotated one to the current one.
func replicaSetFraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if desired(d) == 0 {
		return -specReplicas(rs)
	}
	maxNow := desired(d) + MaxSurge(d)
	maxBefore, ok := maxReplicasAnnotation(rs)
	if !ok || maxBefore == 0 {
		// Scaled by hand or the annotation was lost: use the current size.
		maxBefore = d.Status.Replicas
	}
	if maxBefore == 0 {
		return 0
	}
	size := float64(specReplicas(rs)) * float64(maxNow) / float64(maxBefore)
	return int32(math.Round(size)) - specReplicas(rs)
}
