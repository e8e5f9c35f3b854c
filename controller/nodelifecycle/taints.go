package nodelifecycle

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionTaints maps node conditions to the NoSchedule taint each status
// calls for (Kubernetes' TaintNodesByCondition).
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
}

// managed reports whether the controller owns a taint.
func managed(t corev1.Taint) bool {
	switch t.Key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable:
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	case corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable, corev1.TaintNodeUnschedulable:
		return t.Effect == corev1.TaintEffectNoSchedule
	}
	return false
}

// desiredTaints returns the managed taints node's conditions call for.
func desiredTaints(node *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, cond := range node.Status.Conditions {
		if key, ok := conditionTaints[cond.Type][cond.Status]; ok {
			out = append(out, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	if node.Spec.Unschedulable {
		out = append(out, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	if ready := condition(node, corev1.NodeReady); ready != nil {
		switch ready.Status {
		case corev1.ConditionFalse:
			out = append(out, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
		case corev1.ConditionUnknown:
			out = append(out, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
		}
	}
	return out
}

// reconcileTaints returns node's taints with the managed ones replaced by
// want (keeping timeAdded of taints that stay; new NoExecute taints are
// stamped now), and whether that changes anything.
func reconcileTaints(cur, want []corev1.Taint, now metav1.Time) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	changed := false
	for _, t := range cur {
		if !managed(t) {
			out = append(out, t)
			continue
		}
		if slices.ContainsFunc(want, func(w corev1.Taint) bool { return w.Key == t.Key && w.Effect == t.Effect }) {
			out = append(out, t)
			continue
		}
		changed = true
	}
	for _, w := range want {
		if slices.ContainsFunc(cur, func(t corev1.Taint) bool { return w.Key == t.Key && w.Effect == t.Effect }) {
			continue
		}
		if w.Effect == corev1.TaintEffectNoExecute {
			w.TimeAdded = now.DeepCopy()
		}
		out = append(out, w)
		changed = true
	}
	return out, changed
}

// syncTaints brings one node's managed taints in line with its conditions,
// reading the node live and retrying on conflicts.
func (c *Controller) syncTaints(ctx context.Context, name string) error {
	for range 5 {
		node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading node %s: %w", name, err)
		}
		taints, changed := reconcileTaints(node.Spec.Taints, desiredTaints(node), metav1.NewTime(c.clock.Now()))
		if !changed {
			return nil
		}
		node.Spec.Taints = taints
		_, err = c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		switch {
		case err == nil:
			c.log.Debug("node taints updated", "node", name, "taints", taints)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("updating taints of node %s: %w", name, err)
		}
	}
	return fmt.Errorf("updating taints of node %s: still conflicting", name)
}
