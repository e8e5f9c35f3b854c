package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func newTestScheduler(t *testing.T, profiles []Profile, opts ...Option) *Scheduler {
	t.Helper()
	s, err := New(Config{Client: fake.NewClientset(), Profiles: profiles}, append([]Option{WithRandSeed(7)}, opts...)...)
	require.NoError(t, err)
	return s
}

// scoreByName scores nodes by a table.
type scoreByName map[string]int64

func (m scoreByName) Score(_ context.Context, _ *CycleState, _ *corev1.Pod, n *NodeInfo) (int64, error) {
	return m[n.Name()], nil
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 10, 10}, {0, 99, 99}, {0, 100, 100}, {0, 1000, 420}, {0, 5000, 500}, {0, 6000, 300},
		{0, 100000, 5000}, {10, 1000, 100}, {10, 500, 100}, {50, 1000, 500}, {100, 5000, 5000},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, numFeasibleNodesToFind(tt.pct, tt.nodes), "pct %d nodes %d", tt.pct, tt.nodes)
	}
}

func TestParallelizer(t *testing.T) {
	for _, workers := range []int{1, 2, 16} {
		for _, n := range []int{0, 1, 7, 100, 1001} {
			seen := make([]int32, n)
			parallelizer{workers: workers}.until(n, func(i int) bool { atomic.AddInt32(&seen[i], 1); return false })
			for i := range seen {
				require.Equal(t, int32(1), seen[i], "workers %d n %d item %d", workers, n, i)
			}
		}
	}
	// Stopping ends the work early.
	var count atomic.Int32
	parallelizer{workers: 4}.until(10000, func(int) bool { return count.Add(1) >= 10 })
	assert.Less(t, count.Load(), int32(10000))
}

func TestSelectHostRandomTieBreak(t *testing.T) {
	s := newTestScheduler(t, []Profile{{Plugins: []PluginSpec{{Name: "s", Plugin: ScoreFunc(nil)}}}})
	totals := []int64{5, 9, 3, 9, 9}
	counts := map[int]int{}
	for range 3000 {
		counts[s.selectHost(totals)]++
	}
	assert.Len(t, counts, 3, "only the best nodes are chosen")
	for _, i := range []int{1, 3, 4} {
		assert.InDelta(t, 1000, counts[i], 200, "node %d chosen about a third of the time", i)
	}
	assert.Equal(t, 0, s.selectHost([]int64{7}))
}

func TestPrioritizeWeightsAndNormalization(t *testing.T) {
	fw, err := newFramework(Profile{Plugins: []PluginSpec{
		{Name: "raw", Plugin: scoreByName{"a": 10, "b": 20}, Weight: 2},
		{Name: "normalized", Plugin: &normalizedScorer{scoreByName{"a": 1, "b": 4}}, Weight: 3},
	}}, nil)
	require.NoError(t, err)
	snap := NewSnapshot(nil, []*corev1.Node{cnode("a", "", "1"), cnode("b", "", "1")})
	totals, err := fw.prioritize(context.Background(), parallelizer{workers: 2}, NewCycleState(snap), &corev1.Pod{}, snap.List(), nil)
	require.NoError(t, err)
	// raw: 10*2, 20*2; normalized (max → 100): 25*3, 100*3
	assert.Equal(t, []int64{20 + 75, 40 + 300}, totals)

	bad, err := newFramework(Profile{Plugins: []PluginSpec{{Name: "bad", Plugin: scoreByName{"a": 101}}}}, nil)
	require.NoError(t, err)
	_, err = bad.prioritize(context.Background(), parallelizer{workers: 1}, NewCycleState(snap), &corev1.Pod{}, snap.List(), nil)
	assert.ErrorContains(t, err, "outside [0, 100]")
}

type normalizedScorer struct{ scoreByName }

func (normalizedScorer) NormalizeScore(_ context.Context, _ *CycleState, _ *corev1.Pod, scores []NodeScore) error {
	DefaultNormalizeScore(MaxNodeScore, false, scores)
	return nil
}

func TestDefaultNormalizeScore(t *testing.T) {
	s := []NodeScore{{Score: 2}, {Score: 4}, {Score: 0}}
	DefaultNormalizeScore(100, false, s)
	assert.Equal(t, []int64{50, 100, 0}, []int64{s[0].Score, s[1].Score, s[2].Score})
	s = []NodeScore{{Score: 2}, {Score: 4}, {Score: 0}}
	DefaultNormalizeScore(100, true, s)
	assert.Equal(t, []int64{50, 0, 100}, []int64{s[0].Score, s[1].Score, s[2].Score})
	s = []NodeScore{{Score: 0}, {Score: 0}}
	DefaultNormalizeScore(100, true, s)
	assert.Equal(t, []int64{100, 100}, []int64{s[0].Score, s[1].Score})
}

func TestNewFrameworkErrors(t *testing.T) {
	tests := []struct {
		name string
		p    Profile
	}{
		{"nil plugin", Profile{Plugins: []PluginSpec{{Name: "x"}}}},
		{"duplicate", Profile{Plugins: []PluginSpec{{Name: "x", Plugin: scoreByName{}}, {Name: "x", Plugin: scoreByName{}}}}},
		{"no extension point", Profile{Plugins: []PluginSpec{{Name: "x", Plugin: 42}}}},
		{"plugin lacks an enabled extension point", Profile{Plugins: []PluginSpec{{Name: "x", Plugin: scoreByName{}, Points: PointFilter}}}},
		{"negative weight", Profile{Plugins: []PluginSpec{{Name: "x", Plugin: scoreByName{}, Weight: -1}}}},
		{"bad percentage", Profile{PercentageOfNodesToScore: ptr(int32(101))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newFramework(tt.p, nil)
			assert.ErrorIs(t, err, ErrProfile)
		})
	}
	_, err := New(Config{Client: fake.NewClientset(), Profiles: []Profile{{}, {SchedulerName: DefaultSchedulerName}}})
	assert.ErrorIs(t, err, ErrProfile, "two profiles with one name")
	_, err = New(Config{Client: fake.NewClientset()})
	assert.ErrorIs(t, err, ErrProfile)
	_, err = New(Config{Client: fake.NewClientset(), Profiles: []Profile{{}}}, WithParallelism(0))
	assert.ErrorIs(t, err, ErrProfile)
}

type eventsPlugin struct {
	FilterFunc
	ev ClusterEvent
}

func (e eventsPlugin) EventsToRegister() ClusterEvent { return e.ev }

func TestEventMayHelp(t *testing.T) {
	fw, err := newFramework(Profile{Plugins: []PluginSpec{
		{Name: "nodes", Plugin: eventsPlugin{ev: NodeAdd | NodeUpdate}},
		{Name: "any", Plugin: FilterFunc(nil)},
	}}, nil)
	require.NoError(t, err)
	p := &QueuedPodInfo{UnschedulablePlugins: map[string]bool{"nodes": true}}
	assert.True(t, fw.eventMayHelp(p, NodeAdd))
	assert.False(t, fw.eventMayHelp(p, PodDelete))
	p.UnschedulablePlugins["any"] = true
	assert.True(t, fw.eventMayHelp(p, PodDelete), "a plugin without EnqueueExtensions is woken by all")
	assert.True(t, fw.eventMayHelp(&QueuedPodInfo{}, PodDelete))
}

func TestFindNodesThatFitAdaptiveAndRotating(t *testing.T) {
	var mu sync.Mutex
	evaluated := map[string]int{}
	counting := FilterFunc(func(_ context.Context, _ *CycleState, _ *corev1.Pod, n *NodeInfo) error {
		mu.Lock()
		evaluated[n.Name()]++
		mu.Unlock()
		return nil
	})
	s := newTestScheduler(t, []Profile{{Plugins: []PluginSpec{{Name: "f", Plugin: counting}, {Name: "s", Plugin: scoreByName{}}}}})
	for i := range 1000 {
		s.cache.AddNode(cnode(fmt.Sprintf("n%04d", i), "", "1"))
	}
	s.cache.UpdateSnapshot(s.snapshot)
	fw := s.profiles[DefaultSchedulerName]
	feasible, _, err := s.findNodesThatFit(context.Background(), fw, NewCycleState(s.snapshot), &corev1.Pod{})
	require.NoError(t, err)
	assert.Len(t, feasible, 420, "50% - 1000/125 = 42%")
	first := s.nextStartNodeIndex
	assert.GreaterOrEqual(t, first, 420)
	_, _, err = s.findNodesThatFit(context.Background(), fw, NewCycleState(s.snapshot), &corev1.Pod{})
	require.NoError(t, err)
	assert.Greater(t, len(evaluated), 800, "the next cycle starts where the last stopped")
}

func TestSchedulePodErrors(t *testing.T) {
	boom := errors.New("boom")
	s := newTestScheduler(t, []Profile{
		{SchedulerName: "rejects", Plugins: []PluginSpec{{Name: "r", Plugin: FilterFunc(func(context.Context, *CycleState, *corev1.Pod, *NodeInfo) error {
			return Unschedulable("nope")
		})}}},
		{SchedulerName: "breaks", Plugins: []PluginSpec{{Name: "b", Plugin: FilterFunc(func(context.Context, *CycleState, *corev1.Pod, *NodeInfo) error {
			return boom
		})}}},
		{SchedulerName: "prefilter", Plugins: []PluginSpec{{Name: "pf", Plugin: preFilterFunc(func() error { return Unresolvable("pod is odd") })}}},
	})
	ctx := context.Background()
	_, err := s.schedulePod(ctx, s.profiles["rejects"], NewCycleState(s.snapshot), &corev1.Pod{})
	assert.ErrorIs(t, err, ErrNoNodesAvailable)

	s.cache.AddNode(cnode("n1", "", "1"))
	s.cache.AddNode(cnode("n2", "", "1"))
	_, err = s.schedulePod(ctx, s.profiles["rejects"], NewCycleState(s.snapshot), &corev1.Pod{})
	var fe *FitError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "0/2 nodes are available: 2 nope.", err.Error())
	assert.Equal(t, map[string]bool{"r": true}, fe.Diagnosis.UnschedulablePlugins)

	_, err = s.schedulePod(ctx, s.profiles["breaks"], NewCycleState(s.snapshot), &corev1.Pod{})
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrUnschedulable)

	_, err = s.schedulePod(ctx, s.profiles["prefilter"], NewCycleState(s.snapshot), &corev1.Pod{})
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "0/2 nodes are available: pod is odd.", err.Error())
	assert.Equal(t, map[string]bool{"pf": true}, fe.Diagnosis.UnschedulablePlugins)
}

type preFilterFunc func() error

func (f preFilterFunc) PreFilter(context.Context, *CycleState, *corev1.Pod) error { return f() }
