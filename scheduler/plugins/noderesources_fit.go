package plugins

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/scheduler"
)

// NodeResourcesFitName is the plugin's name.
const NodeResourcesFitName = "NodeResourcesFit"

// FitArgs configure NodeResourcesFit.
type FitArgs struct {
	// IgnoredResources are extended resources not checked by Filter.
	IgnoredResources []string `json:"ignoredResources,omitempty"`
	// IgnoredResourceGroups are extended resource domains (the part before
	// "/") not checked by Filter.
	IgnoredResourceGroups []string `json:"ignoredResourceGroups,omitempty"`
	// ScoringStrategy picks the score; default LeastAllocated on cpu and
	// memory with weight 1 each.
	ScoringStrategy *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// Fit filters out nodes without room for the pod's requests (cpu, memory,
// ephemeral-storage, pod count, extended resources, hugepages) and scores
// nodes with a ScoringStrategy.
type Fit struct {
	ignored       map[string]bool
	ignoredGroups map[string]bool
	scorer        resourceScorer
}

var (
	_ scheduler.PreFilter         = (*Fit)(nil)
	_ scheduler.Filter            = (*Fit)(nil)
	_ scheduler.PreScore          = (*Fit)(nil)
	_ scheduler.Scorer            = (*Fit)(nil)
	_ scheduler.EnqueueExtensions = (*Fit)(nil)
)

// NewFit returns the plugin.
func NewFit(args FitArgs) (*Fit, error) {
	st := ScoringStrategy{Type: LeastAllocated}
	if args.ScoringStrategy != nil {
		st = *args.ScoringStrategy
	}
	scorer, err := newResourceScorer(NodeResourcesFitName, st)
	if err != nil {
		return nil, err
	}
	f := &Fit{ignored: map[string]bool{}, ignoredGroups: map[string]bool{}, scorer: scorer}
	for _, r := range args.IgnoredResources {
		f.ignored[r] = true
	}
	for _, g := range args.IgnoredResourceGroups {
		if strings.Contains(g, "/") {
			return nil, fmt.Errorf("%s: ignored resource group %q must not contain '/': %w", NodeResourcesFitName, g, scheduler.ErrProfile)
		}
		f.ignoredGroups[g] = true
	}
	return f, nil
}

// Name returns NodeResourcesFitName.
func (*Fit) Name() string { return NodeResourcesFitName }

// EventsToRegister: a new or bigger node, or a pod gone or shrunk.
func (*Fit) EventsToRegister() scheduler.ClusterEvent {
	return scheduler.NodeAdd | scheduler.NodeUpdate | scheduler.PodDelete | scheduler.PodUpdate
}

const fitStateKey = "PreFilter" + NodeResourcesFitName

type fitState struct{ scheduler.Resource }

// PreFilter computes the pod's requests once per cycle.
func (*Fit) PreFilter(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod) error {
	s.Write(fitStateKey, &fitState{scheduler.PodRequests(pod, false)})
	return nil
}

// InsufficientResource describes one resource a node lacks.
type InsufficientResource struct {
	Name      corev1.ResourceName
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
	// Unresolvable: the request exceeds the node's allocatable, so no
	// pod removal can help.
	Unresolvable bool
}

// Filter rejects a node lacking room, with every reason at once
// ("Too many pods", "Insufficient cpu", "Insufficient memory", ...).
func (f *Fit) Filter(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, n *scheduler.NodeInfo) error {
	st, err := scheduler.ReadAs[*fitState](s, fitStateKey)
	if err != nil {
		return err
	}
	insufficient := f.Insufficient(&st.Resource, n)
	if len(insufficient) == 0 {
		return nil
	}
	reasons := make([]string, len(insufficient))
	unresolvable := false
	for i, r := range insufficient {
		reasons[i] = r.Reason
		unresolvable = unresolvable || r.Unresolvable
	}
	if unresolvable {
		return scheduler.Unresolvable(reasons...)
	}
	return scheduler.Unschedulable(reasons...)
}

// Insufficient lists what node n lacks for a pod requesting req.
func (f *Fit) Insufficient(req *scheduler.Resource, n *scheduler.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := &n.Allocatable, &n.Requested
	if int64(len(n.Pods))+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{Name: corev1.ResourcePods, Reason: "Too many pods",
			Requested: 1, Used: int64(len(n.Pods)), Capacity: alloc.AllowedPodNumber})
	}
	if req.IsZero() {
		return out
	}
	check := func(name corev1.ResourceName, want, have, usedAmt int64) {
		if want > 0 && want > have-usedAmt {
			out = append(out, InsufficientResource{Name: name, Reason: "Insufficient " + string(name),
				Requested: want, Used: usedAmt, Capacity: have, Unresolvable: want > have})
		}
	}
	check(corev1.ResourceCPU, req.MilliCPU, alloc.MilliCPU, used.MilliCPU)
	check(corev1.ResourceMemory, req.Memory, alloc.Memory, used.Memory)
	check(corev1.ResourceEphemeralStorage, req.EphemeralStorage, alloc.EphemeralStorage, used.EphemeralStorage)
	if len(req.ScalarResources) > 0 {
		names := make([]string, 0, len(req.ScalarResources))
		for name := range req.ScalarResources {
			names = append(names, string(name))
		}
		sort.Strings(names)
		for _, name := range names {
			rn := corev1.ResourceName(name)
			if f.isIgnored(name) {
				continue
			}
			check(rn, req.ScalarResources[rn], alloc.ScalarResources[rn], used.ScalarResources[rn])
		}
	}
	return out
}

// isIgnored applies IgnoredResources / IgnoredResourceGroups to extended
// resources (domain-qualified names outside kubernetes.io).
func (f *Fit) isIgnored(name string) bool {
	i := strings.Index(name, "/")
	if i < 0 || strings.HasPrefix(name, "kubernetes.io/") {
		return false
	}
	return f.ignored[name] || f.ignoredGroups[name[:i]]
}

// PreScore computes what the pod adds to each scored resource.
func (f *Fit) PreScore(_ context.Context, s *scheduler.CycleState, pod *corev1.Pod, _ []*scheduler.NodeInfo) error {
	s.Write(fitScoreStateKey, f.scorer.podRequests(pod))
	return nil
}

const fitScoreStateKey = "PreScore" + NodeResourcesFitName

// Score rates the node with the scoring strategy.
func (f *Fit) Score(_ context.Context, s *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	req, err := scheduler.ReadAs[[]int64](s, fitScoreStateKey)
	if err != nil {
		return 0, err
	}
	return f.scorer.score(req, n), nil
}
