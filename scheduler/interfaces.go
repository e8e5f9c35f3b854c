package scheduler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Score bounds: every Scorer's scores are normalised to [MinNodeScore,
// MaxNodeScore] before weights apply.
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is a value implementing one or more extension points: PreFilter,
// Filter, PreScore, Scorer, ScoreNormalizer, EnqueueExtensions, PreEnqueuer.
// A plugin may implement Named to give itself a name.
type Plugin any

// Named is implemented by plugins that know their own name.
type Named interface{ Name() string }

// Filter decides whether pod can run on a node. It returns nil when it can,
// an error wrapping ErrUnschedulable or ErrUnresolvable with the reason when
// it cannot (see Unschedulable and Unresolvable), and any other error for an
// internal failure. Filter is called concurrently for different nodes.
type Filter interface {
	Filter(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) error
}

// Scorer ranks a feasible node for pod. Scores of each plugin are brought to
// [0, 100] (by the plugin's ScoreNormalizer if it has one, else they must
// already be in range) and multiplied by the plugin's weight. Score is called
// concurrently for different nodes.
type Scorer interface {
	Score(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) (int64, error)
}

// PreFilter runs once per scheduling cycle before Filter, typically to
// compute state that Filter reads from the CycleState. Returning an error
// wrapping ErrUnschedulable rejects the pod on every node; returning ErrSkip
// means the plugin's Filter is not needed for this pod.
type PreFilter interface {
	PreFilter(ctx context.Context, s *CycleState, pod *corev1.Pod) error
}

// PreScore runs once per scheduling cycle before Score with the feasible
// nodes. Returning ErrSkip means the plugin's Score is not needed.
type PreScore interface {
	PreScore(ctx context.Context, s *CycleState, pod *corev1.Pod, nodes []*NodeInfo) error
}

// NodeScore is the score of one node.
type NodeScore struct {
	Name  string
	Score int64
}

// ScoreNormalizer rewrites a Scorer's raw scores into [0, 100].
type ScoreNormalizer interface {
	NormalizeScore(ctx context.Context, s *CycleState, pod *corev1.Pod, scores []NodeScore) error
}

// Binder assigns pod to the node. The default Binder posts to the
// pods/binding subresource.
type Binder interface {
	Bind(ctx context.Context, pod *corev1.Pod, nodeName string) error
}

// PreEnqueuer gates a pod before it enters the active queue: a non-nil
// error keeps it out (for example while it has scheduling gates) until the
// pod is updated.
type PreEnqueuer interface {
	PreEnqueue(ctx context.Context, pod *corev1.Pod) error
}

// ClusterEvent is a bit set of cluster changes that can make an
// unschedulable pod schedulable.
type ClusterEvent uint32

// Cluster events. "Pod" events are about pods assigned to nodes.
const (
	NodeAdd ClusterEvent = 1 << iota
	NodeUpdate
	NodeDelete
	PodAdd
	PodUpdate
	PodDelete

	AllEvents = NodeAdd | NodeUpdate | NodeDelete | PodAdd | PodUpdate | PodDelete
)

// EnqueueExtensions tells the queue which cluster events may resolve a
// rejection by this plugin. Plugins without it are woken by every event.
type EnqueueExtensions interface {
	EventsToRegister() ClusterEvent
}

// FilterFunc adapts a function to Filter.
type FilterFunc func(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) error

// Filter calls f.
func (f FilterFunc) Filter(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) error {
	return f(ctx, s, pod, n)
}

// ScoreFunc adapts a function to Scorer.
type ScoreFunc func(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) (int64, error)

// Score calls f.
func (f ScoreFunc) Score(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) (int64, error) {
	return f(ctx, s, pod, n)
}

// BindFunc adapts a function to Binder.
type BindFunc func(ctx context.Context, pod *corev1.Pod, nodeName string) error

// Bind calls f.
func (f BindFunc) Bind(ctx context.Context, pod *corev1.Pod, nodeName string) error {
	return f(ctx, pod, nodeName)
}

var (
	_ Filter = FilterFunc(nil)
	_ Scorer = ScoreFunc(nil)
	_ Binder = BindFunc(nil)
)
