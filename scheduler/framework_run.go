package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// runPreFilter runs the PreFilter plugins. A rejection is returned as a
// StatusError naming its plugin; other errors are internal.
func (fw *framework) runPreFilter(ctx context.Context, s *CycleState, pod *corev1.Pod) error {
	var skipped map[string]bool
	for _, pl := range fw.preFilter {
		err := pl.p.PreFilter(ctx, s, pod)
		switch {
		case err == nil:
		case errors.Is(err, ErrSkip):
			if skipped == nil {
				skipped = map[string]bool{}
			}
			skipped[pl.name] = true
		case errors.Is(err, ErrUnschedulable):
			return withPlugin(err, pl.name)
		default:
			return fmt.Errorf("running PreFilter plugin %q: %w", pl.name, err)
		}
	}
	s.skipFilter = nil
	if skipped != nil {
		s.skipFilter = make([]bool, len(fw.filter))
		for i, pl := range fw.filter {
			s.skipFilter[i] = skipped[pl.name]
		}
	}
	return nil
}

// runFilter runs the Filter plugins on one node, stopping at the first
// rejection; it returns the rejection (as the plugin returned it, which may
// be a shared value) and the rejecting plugin, or an internal error.
func (fw *framework) runFilter(ctx context.Context, s *CycleState, pod *corev1.Pod, n *NodeInfo) (rejection error, plugin string, err error) {
	for i, pl := range fw.filter {
		if s.skipFilter != nil && s.skipFilter[i] {
			continue
		}
		if err := pl.p.Filter(ctx, s, pod, n); err != nil {
			if errors.Is(err, ErrUnschedulable) {
				return err, pl.name, nil
			}
			return nil, pl.name, fmt.Errorf("running Filter plugin %q on node %q: %w", pl.name, n.Name(), err)
		}
	}
	return nil, "", nil
}

// RunFilters runs the profile's PreFilter and Filter plugins for pod on one
// node, as a scheduling cycle would; tools and tests use it to explain a
// decision.
func (s *Scheduler) RunFilters(ctx context.Context, state *CycleState, pod *corev1.Pod, n *NodeInfo) error {
	fw, ok := s.profiles[schedulerNameOf(pod)]
	if !ok {
		return fmt.Errorf("no profile for scheduler name %q: %w", pod.Spec.SchedulerName, ErrProfile)
	}
	if err := fw.runPreFilter(ctx, state, pod); err != nil {
		return err
	}
	rejection, plugin, err := fw.runFilter(ctx, state, pod, n)
	if err != nil {
		return err
	}
	if rejection != nil {
		return withPlugin(rejection, plugin)
	}
	return nil
}

// prioritize runs PreScore, Score, normalisation and weights, returning the
// total score of each node (same order as nodes).
func (fw *framework) prioritize(ctx context.Context, par parallelizer, s *CycleState, pod *corev1.Pod, nodes []*NodeInfo, buf *buffers) ([]int64, error) {
	if buf == nil {
		buf = &buffers{}
	}
	totals := grow(&buf.totals, len(nodes))
	if len(fw.score) == 0 {
		for i := range totals {
			totals[i] = 1
		}
		return totals, nil
	}
	var skipped map[string]bool
	for _, pl := range fw.preScore {
		err := pl.p.PreScore(ctx, s, pod, nodes)
		switch {
		case err == nil:
		case errors.Is(err, ErrSkip):
			if skipped == nil {
				skipped = map[string]bool{}
			}
			skipped[pl.name] = true
		default:
			return nil, fmt.Errorf("running PreScore plugin %q: %w", pl.name, err)
		}
	}
	active := make([]scorePlugin, 0, len(fw.score))
	for _, pl := range fw.score {
		if !skipped[pl.name] {
			active = append(active, pl)
		}
	}
	if len(active) == 0 {
		return totals, nil
	}
	// The parallel phase writes bare scores: no node name per entry, so
	// no pointer writes (and GC write barriers) for hundreds of nodes
	// times each plugin. Names are attached only for the plugins that
	// normalise.
	if len(buf.scores) < len(active) {
		buf.scores = append(buf.scores, make([][]int64, len(active)-len(buf.scores))...)
	}
	scores := buf.scores[:len(active)]
	for j := range active {
		scores[j] = reuse(&scores[j], len(nodes)) // every entry is written
	}
	errs := grow(&buf.errs, len(nodes))
	par.until(len(nodes), func(i int) bool {
		for j, pl := range active {
			v, err := pl.scorer.Score(ctx, s, pod, nodes[i])
			if err != nil {
				errs[i] = fmt.Errorf("running Score plugin %q on node %q: %w", pl.name, nodes[i].Name(), err)
				return true
			}
			scores[j][i] = v
		}
		return false
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for j, pl := range active {
		if pl.normalizer != nil {
			named := reuse(&buf.named, len(nodes))
			for i, v := range scores[j] {
				named[i] = NodeScore{Name: nodes[i].Name(), Score: v}
			}
			if err := pl.normalizer.NormalizeScore(ctx, s, pod, named); err != nil {
				return nil, fmt.Errorf("running NormalizeScore of plugin %q: %w", pl.name, err)
			}
			for i := range named {
				scores[j][i] = named[i].Score
			}
		}
		for i, v := range scores[j] {
			if v < MinNodeScore || v > MaxNodeScore {
				return nil, fmt.Errorf("plugin %q returned score %d for node %q, outside [%d, %d]",
					pl.name, v, nodes[i].Name(), MinNodeScore, MaxNodeScore)
			}
			totals[i] += v * pl.weight
		}
	}
	return totals, nil
}

// nodeStatus is one node's Filter rejection.
type nodeStatus struct {
	err    error
	plugin string
}

// buffers are per-cycle slices the scheduling goroutine reuses.
type buffers struct {
	statuses []nodeStatus
	feasible []*NodeInfo
	scores   [][]int64
	named    []NodeScore
	totals   []int64
	errs     []error
}

// grow returns (*buf)[:n] zeroed, reallocating when too small.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

// reuse returns (*buf)[:n] without clearing it (for buffers whose every
// read entry is written first), reallocating when too small.
func reuse[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// DefaultNormalizeScore scales scores so the largest becomes
// MaxNodeScore (all become MaxNodeScore if every score is 0 and reverse);
// with reverse, a high raw score becomes a low final score.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) {
	var maxCount int64
	for i := range scores {
		maxCount = max(maxCount, scores[i].Score)
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
}

// preFilterMessage joins a PreFilter rejection's reasons.
func preFilterMessage(err error) string { return strings.Join(Reasons(err), ", ") }
