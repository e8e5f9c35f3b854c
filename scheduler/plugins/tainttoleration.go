package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// TaintTolerationName is the plugin's name.
const TaintTolerationName = "TaintToleration"

// TaintToleration filters out nodes with a NoSchedule or NoExecute taint
// the pod does not tolerate, and prefers nodes with fewer untolerated
// PreferNoSchedule taints.
type TaintToleration struct{}

var (
	_ scheduler.Filter            = (*TaintToleration)(nil)
	_ scheduler.PreScore          = (*TaintToleration)(nil)
	_ scheduler.Scorer            = (*TaintToleration)(nil)
	_ scheduler.ScoreNormalizer   = (*TaintToleration)(nil)
	_ scheduler.EnqueueExtensions = (*TaintToleration)(nil)
)

// NewTaintToleration returns the plugin.
func NewTaintToleration() *TaintToleration { return &TaintToleration{} }

// Name returns TaintTolerationName.
func (*TaintToleration) Name() string { return TaintTolerationName }

// EventsToRegister: taints change only with nodes.
func (*TaintToleration) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.NodeAdd | scheduler.NodeUpdate
}

// Filter rejects a node with an untolerated NoSchedule/NoExecute taint,
// naming the first one: "node(s) had untolerated taint {key: value}".
func (*TaintToleration) Filter(_ context.Context, _ *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) error {
	if n.Node() == nil {
		return errUnknownNode
	}
	if t, ok := untoleratedTaint(n.Taints(), pod.Spec.Tolerations, noScheduleOrNoExecute); ok {
		return scheduler.Unresolvable(fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
	}
	return nil
}

const taintTolerationStateKey = "PreScore" + TaintTolerationName

// preferNoScheduleTolerations are the tolerations that count for scoring.
type preferNoScheduleTolerations []corev1.Toleration

// PreScore keeps the tolerations whose effect is empty or PreferNoSchedule.
func (*TaintToleration) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, _ []*scheduler.NodeInfo) error {
	var tols preferNoScheduleTolerations
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	s.Write(taintTolerationStateKey, tols)
	return nil
}

// Score counts the node's untolerated PreferNoSchedule taints (fewer is
// better after normalisation).
func (*TaintToleration) Score(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	tols, err := scheduler.ReadAs[preferNoScheduleTolerations](s, taintTolerationStateKey)
	if err != nil {
		return 0, err
	}
	var count int64
	taints := n.Taints()
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !tolerated(tols, t) {
			count++
		}
	}
	return count, nil
}

// NormalizeScore reverses the counts onto 0..100.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, scores []scheduler.NodeScore) error {
	scheduler.DefaultNormalizeScore(scheduler.MaxNodeScore, true, scores)
	return nil
}
