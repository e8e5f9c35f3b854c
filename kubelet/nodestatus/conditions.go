package nodestatus

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Ready condition reasons and message, as the kubelet words them.
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"
	MessageKubeletReady   = "kubelet is posting ready status"
)

// pressureCondition is a pressure condition's wording both ways: the
// condition's reason and message, and the reason of the event recorded
// on the transition.
type pressureCondition struct {
	typ                             corev1.NodeConditionType
	onReason, onMessage, onEvent    string
	offReason, offMessage, offEvent string
}

// pressureConditions in the order the kubelet appends them.
var pressureConditions = []pressureCondition{
	{typ: corev1.NodeMemoryPressure,
		onReason: "KubeletHasInsufficientMemory", onMessage: "kubelet has insufficient memory available", onEvent: "NodeHasInsufficientMemory",
		offReason: "KubeletHasSufficientMemory", offMessage: "kubelet has sufficient memory available", offEvent: "NodeHasSufficientMemory"},
	{typ: corev1.NodeDiskPressure,
		onReason: "KubeletHasDiskPressure", onMessage: "kubelet has disk pressure", onEvent: "NodeHasDiskPressure",
		offReason: "KubeletHasNoDiskPressure", offMessage: "kubelet has no disk pressure", offEvent: "NodeHasNoDiskPressure"},
	{typ: corev1.NodePIDPressure,
		onReason: "KubeletHasInsufficientPID", onMessage: "kubelet has insufficient PID available", onEvent: "NodeHasInsufficientPID",
		offReason: "KubeletHasSufficientPID", offMessage: "kubelet has sufficient PID available", offEvent: "NodeHasSufficientPID"},
}

// findCondition returns the node's condition of type t, or nil.
func findCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// setPressureCondition updates one pressure condition as the kubelet's
// setters do: the heartbeat always moves; status, reason, message and
// lastTransitionTime change only on a transition (a new condition starts
// Unknown, so its first observation is a transition), which is recorded
// as an event.
func (c *Controller) setPressureCondition(node *corev1.Node, pc pressureCondition, under bool, now time.Time) {
	ts := metav1.NewTime(now)
	cond := findCondition(node, pc.typ)
	if cond == nil {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: pc.typ, Status: corev1.ConditionUnknown})
		cond = &node.Status.Conditions[len(node.Status.Conditions)-1]
	}
	cond.LastHeartbeatTime = ts
	switch {
	case under && cond.Status != corev1.ConditionTrue:
		cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionTrue, pc.onReason, pc.onMessage, ts
		c.statusEvent(corev1.EventTypeNormal, pc.onEvent)
	case !under && cond.Status != corev1.ConditionFalse:
		cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionFalse, pc.offReason, pc.offMessage, ts
		c.statusEvent(corev1.EventTypeNormal, pc.offEvent)
	}
}

// setReadyCondition sets Ready from Config.Ready and the capacity the
// node must report (cpu, memory, pods, ephemeral-storage), keeping
// lastTransitionTime while the status holds. Ready is moved to the end of
// the conditions, where Kubernetes keeps it.
func (c *Controller) setReadyCondition(node *corev1.Node, now time.Time) {
	ts := metav1.NewTime(now)
	var errs []string
	if c.cfg.Ready != nil {
		if err := c.cfg.Ready(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	var missing []string
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		if _, ok := node.Status.Capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Sprintf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	next := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: ReasonKubeletReady,
		Message: MessageKubeletReady, LastHeartbeatTime: ts, LastTransitionTime: ts}
	if len(errs) > 0 {
		next.Status, next.Reason, next.Message = corev1.ConditionFalse, ReasonKubeletNotReady, aggregate(errs)
	}
	conds := node.Status.Conditions[:0:0]
	for _, cond := range node.Status.Conditions {
		if cond.Type != corev1.NodeReady {
			conds = append(conds, cond)
			continue
		}
		if cond.Status == next.Status {
			next.LastTransitionTime = cond.LastTransitionTime
		}
	}
	if prev := findCondition(node, corev1.NodeReady); prev == nil || prev.Status != next.Status {
		if next.Status == corev1.ConditionTrue {
			c.statusEvent(corev1.EventTypeNormal, "NodeReady")
		} else {
			c.statusEvent(corev1.EventTypeNormal, "NodeNotReady")
		}
	}
	node.Status.Conditions = append(conds, next)
}

// aggregate joins messages like apimachinery's aggregate error: one is
// itself, several are "[a, b]".
func aggregate(msgs []string) string {
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// statusEvent records "Node <name> status is now: <reason>".
func (c *Controller) statusEvent(eventType, reason string) {
	c.event(eventType, reason, fmt.Sprintf("Node %s status is now: %s", c.cfg.NodeName, reason))
}

// event records an event about the node, when a recorder is configured.
func (c *Controller) event(eventType, reason, message string) {
	if c.cfg.Recorder != nil {
		c.cfg.Recorder.Event(nodeRef(c.cfg.NodeName), eventType, reason, message)
	}
}
