package plugins

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// SchedulingGatesName is the plugin's name.
const SchedulingGatesName = "SchedulingGates"

// SchedulingGates keeps a pod with spec.schedulingGates out of the active
// queue until an update removes the gates.
type SchedulingGates struct{}

var _ scheduler.PreEnqueuer = (*SchedulingGates)(nil)

// NewSchedulingGates returns the plugin.
func NewSchedulingGates() *SchedulingGates { return &SchedulingGates{} }

// Name returns SchedulingGatesName.
func (*SchedulingGates) Name() string { return SchedulingGatesName }

// PreEnqueue rejects a pod that still has scheduling gates.
func (*SchedulingGates) PreEnqueue(_ context.Context, pod *corev1.Pod) error {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	names := make([]string, len(pod.Spec.SchedulingGates))
	for i, g := range pod.Spec.SchedulingGates {
		names[i] = g.Name
	}
	return scheduler.Unresolvable(fmt.Sprintf("waiting for scheduling gates: [%s]", strings.Join(names, " ")))
}
