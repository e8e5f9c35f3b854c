package tainteviction

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// noExecute returns the NoExecute taints.
func noExecute(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// Tolerates reports whether toleration tol matches taint: same effect (or
// any, when empty), and key and value per the operator (Exists with an
// empty key matches every taint).
func Tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return tol.Key != "" && tol.Value == taint.Value
	}
	return false
}

// EvictionTime returns when a pod with tolerations must leave a node with
// the given NoExecute taints, each added at starts[i]. evict is false when
// the pod tolerates them all forever. As in Kubernetes, the first of the
// pod's tolerations that matches a taint is the one that counts: without
// tolerationSeconds it tolerates the taint forever, with it the pod may
// stay that long after the taint was added (zero or negative: not at
// all). A taint no toleration matches evicts the pod at once (the zero
// time); with several taints the earliest deadline wins.
func EvictionTime(taints []corev1.Taint, starts []time.Time, tolerations []corev1.Toleration) (at time.Time, evict bool) {
	for i, taint := range taints {
		var tol *corev1.Toleration
		for j := range tolerations {
			if Tolerates(tolerations[j], taint) {
				tol = &tolerations[j]
				break
			}
		}
		if tol == nil {
			return time.Time{}, true
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		deadline := starts[i].Add(time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second)
		if !evict || deadline.Before(at) {
			at, evict = deadline, true
		}
	}
	return at, evict
}
