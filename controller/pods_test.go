package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Unix(1_000_000, 0)

type podOpt func(*corev1.Pod)

func node(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}
func readySince(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-d))}}
	}
}
func created(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func cost(c string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotation: c} }
}

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
	p.Spec.NodeName = "n1"
	p.Status.Phase = corev1.PodRunning
	for _, o := range opts {
		o(p)
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func TestRankPodsForDeletion(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod
		now     time.Time
		want    []string
	}{
		{"unscheduled first", []*corev1.Pod{pod("a", readySince(time.Hour)), pod("b", node(""), phase(corev1.PodPending))}, nil, t0, []string{"b", "a"}},
		{"pending < unknown < running",
			[]*corev1.Pod{pod("run"), pod("unk", phase(corev1.PodUnknown)), pod("pend", phase(corev1.PodPending))}, nil, t0,
			[]string{"pend", "unk", "run"}},
		{"not ready before ready", []*corev1.Pod{pod("r", readySince(time.Minute)), pod("nr")}, nil, t0, []string{"nr", "r"}},
		{"lower deletion cost first",
			[]*corev1.Pod{pod("hi", readySince(time.Minute), cost("10")), pod("lo", readySince(time.Minute), cost("-5")), pod("mid", readySince(time.Minute))}, nil, t0,
			[]string{"lo", "mid", "hi"}},
		{"doubled-up nodes first",
			[]*corev1.Pod{pod("alone", node("n2"), readySince(time.Minute)), pod("crowded", node("n1"), readySince(time.Minute))},
			[]*corev1.Pod{pod("x", node("n1")), pod("y", node("n1")), pod("alone", node("n2")), pod("crowded", node("n1"))}, t0,
			[]string{"crowded", "alone"}},
		{"ready more recently first (exact times without now)",
			[]*corev1.Pod{pod("old", readySince(time.Hour)), pod("new", readySince(time.Minute))}, nil, time.Time{},
			[]string{"new", "old"}},
		{"ready times in different log buckets",
			[]*corev1.Pod{pod("old", readySince(time.Hour)), pod("new", readySince(time.Second))}, nil, t0,
			[]string{"new", "old"}},
		{"same log bucket: by UID",
			[]*corev1.Pod{pod("b", readySince(100*time.Second)), pod("a", readySince(101*time.Second))}, nil, t0,
			[]string{"a", "b"}},
		{"more restarts first",
			[]*corev1.Pod{pod("calm", restarts(0)), pod("flappy", restarts(7))}, nil, t0, []string{"flappy", "calm"}},
		{"newer first",
			[]*corev1.Pod{pod("old", created(time.Hour)), pod("new", created(time.Minute)), pod("zero")}, nil, time.Time{},
			[]string{"zero", "new", "old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := append([]*corev1.Pod(nil), tc.pods...)
			related := tc.related
			if related == nil {
				related = pods
			}
			RankPodsForDeletion(pods, related, tc.now)
			assert.Equal(t, tc.want, names(pods))
		})
	}
}

func TestPodAvailability(t *testing.T) {
	notReady := pod("p")
	assert.False(t, IsPodReady(notReady))
	assert.False(t, IsPodAvailable(notReady, 0, t0))
	_, ok := AvailableIn(notReady, 5, t0)
	assert.False(t, ok)

	ready := pod("p", readySince(3*time.Second))
	assert.True(t, IsPodReady(ready))
	assert.True(t, IsPodAvailable(ready, 0, t0))
	assert.True(t, IsPodAvailable(ready, 2, t0))
	assert.False(t, IsPodAvailable(ready, 3, t0), "available strictly after minReadySeconds")
	assert.False(t, IsPodAvailable(ready, 10, t0))
	d, ok := AvailableIn(ready, 10, t0)
	assert.True(t, ok)
	assert.Equal(t, 7*time.Second+time.Millisecond, d)
	d, ok = AvailableIn(ready, 2, t0)
	assert.True(t, ok)
	assert.Zero(t, d)
}

func TestIsPodActive(t *testing.T) {
	now := metav1.NewTime(t0)
	for _, tc := range []struct {
		p    *corev1.Pod
		want bool
	}{
		{pod("run"), true},
		{pod("pend", phase(corev1.PodPending)), true},
		{pod("ok", phase(corev1.PodSucceeded)), false},
		{pod("bad", phase(corev1.PodFailed)), false},
		{func() *corev1.Pod { p := pod("del"); p.DeletionTimestamp = &now; return p }(), false},
	} {
		assert.Equal(t, tc.want, IsPodActive(tc.p), tc.p.Name)
	}
	assert.Equal(t, []string{"run"}, names(FilterActivePods([]*corev1.Pod{pod("run"), pod("ok", phase(corev1.PodSucceeded))})))
}

func TestSlowStartBatch(t *testing.T) {
	for _, tc := range []struct {
		count, initial, failFrom int // calls numbered from 1; 0: never fail
		wantOK, wantCalls        int
	}{
		{count: 10, initial: 1, wantOK: 10, wantCalls: 10},
		{count: 0, initial: 1, wantOK: 0, wantCalls: 0},
		{count: 10, initial: 1, failFrom: 1, wantOK: 0, wantCalls: 1},
		{count: 10, initial: 1, failFrom: 2, wantOK: 1, wantCalls: 3},  // batches 1, 2
		{count: 10, initial: 1, failFrom: 4, wantOK: 3, wantCalls: 7},  // batches 1, 2, 4
		{count: 10, initial: 2, failFrom: 7, wantOK: 6, wantCalls: 10}, // batches 2, 4, 4
	} {
		t.Run(fmt.Sprintf("%d-%d-%d", tc.count, tc.initial, tc.failFrom), func(t *testing.T) {
			var mu = make(chan struct{}, 1)
			calls := 0
			ok, err := SlowStartBatch(tc.count, tc.initial, func() error {
				mu <- struct{}{}
				calls++
				n := calls
				<-mu
				if tc.failFrom > 0 && n >= tc.failFrom {
					return fmt.Errorf("call %d failed", n)
				}
				return nil
			})
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantCalls, calls)
			assert.Equal(t, tc.failFrom > 0 && tc.failFrom <= tc.count, err != nil)
		})
	}
}
