package plugins

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// Rejections with fixed reasons, shared: Filter runs for every node, and
// rejections are never modified.
var (
	errUnknownNode                       = scheduler.Unresolvable(errReasonUnknownNode)
	errNodeUnschedulable                 = scheduler.Unresolvable(ErrReasonUnschedulable)
	errNodeName                          = scheduler.Unresolvable(ErrReasonNodeName)
	errNodeAffinity                      = scheduler.Unresolvable(ErrReasonNodeAffinity)
	errEnforcedAffinity                  = scheduler.Unresolvable(ErrReasonEnforcedAffinity)
	errNodePorts                         = scheduler.Unschedulable(ErrReasonNodePorts)
	errNodeLabelNotMatch                 = scheduler.Unresolvable(ErrReasonNodeLabelNotMatch)
	errConstraintsNotMatch               = scheduler.Unschedulable(ErrReasonConstraintsNotMatch)
	errAffinityRulesNotMatch             = scheduler.Unresolvable(ErrReasonAffinityRulesNotMatch)
	errAntiAffinityRulesNotMatch         = scheduler.Unschedulable(ErrReasonAntiAffinityRulesNotMatch)
	errExistingAntiAffinityRulesNotMatch = scheduler.Unschedulable(ErrReasonExistingAntiAffinityRulesNotMatch)
)

// toleratesTaint reports whether tol tolerates taint: same effect (or any
// when empty), same key (or any when empty with Exists), and a matching
// value for Equal, or a numeric comparison for Gt / Lt.
func toleratesTaint(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case "", corev1.TolerationOpEqual:
		return tol.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpGt, corev1.TolerationOpLt:
		tv, err1 := strconv.ParseInt(tol.Value, 10, 64)
		nv, err2 := strconv.ParseInt(taint.Value, 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if tol.Operator == corev1.TolerationOpGt {
			return nv > tv
		}
		return nv < tv
	}
	return false
}

// tolerated reports whether any toleration tolerates taint.
func tolerated(tols []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tols {
		if toleratesTaint(&tols[i], taint) {
			return true
		}
	}
	return false
}

// untoleratedTaint returns the first taint accepted by include that no
// toleration tolerates.
func untoleratedTaint(taints []corev1.Taint, tols []corev1.Toleration, include func(*corev1.Taint) bool) (*corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if include != nil && !include(t) {
			continue
		}
		if !tolerated(tols, t) {
			return t, true
		}
	}
	return nil, false
}

// noScheduleOrNoExecute selects the taints that forbid scheduling.
func noScheduleOrNoExecute(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
