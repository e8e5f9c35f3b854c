package deployment

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func template(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
	}
}

func TestComputeHash(t *testing.T) {
	tmpl := template("img:1")
	h := ComputeHash(&tmpl, nil)
	assert.Equal(t, h, ComputeHash(&tmpl, nil), "deterministic")
	assert.Regexp(t, `^[bcdfghjklmnpqrstvwxz2456789]{1,10}$`, h, "safe-encoded decimal of a uint32")
	assert.NotEqual(t, h, ComputeHash(&tmpl, ptr.To[int32](1)), "the collision count changes the hash")
	assert.NotEqual(t, ComputeHash(&tmpl, ptr.To[int32](1)), ComputeHash(&tmpl, ptr.To[int32](2)))
	assert.Equal(t, h, ComputeHash(&tmpl, nil), "hashing does not mutate")

	seen := map[string]int{}
	for i := range 1000 {
		v := template(fmt.Sprintf("registry/cats:v0.%d.0", i))
		hv := ComputeHash(&v, nil)
		if j, dup := seen[hv]; dup {
			t.Fatalf("templates %d and %d hash to %s", j, i, hv)
		}
		seen[hv] = i
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	a, b := template("img:1"), template("img:1")
	b.Labels = withLabel(b.Labels, HashLabel, "abc")
	assert.True(t, EqualIgnoreHash(&a, &b))
	assert.Equal(t, map[string]string{"app": "web", HashLabel: "abc"}, b.Labels, "inputs untouched")
	c := template("img:2")
	assert.False(t, EqualIgnoreHash(&a, &c))
	d := template("img:1")
	d.Labels["tier"] = "front"
	assert.False(t, EqualIgnoreHash(&a, &d))
}

func TestResolveFenceposts(t *testing.T) {
	i, s := intstr.FromInt32, intstr.FromString
	for _, tc := range []struct {
		surge, unavailable intstr.IntOrString
		desired            int32
		wantS, wantU       int32
		wantErr            bool
	}{
		{i(1), i(1), 10, 1, 1, false},
		{s("25%"), s("25%"), 10, 3, 2, false}, // 2.5: surge rounds up, unavailable down
		{s("25%"), s("25%"), 4, 1, 1, false},
		{s("25%"), s("25%"), 1, 1, 0, false},
		{s("10%"), s("10%"), 3, 1, 0, false},
		{i(0), s("10%"), 3, 0, 1, false}, // both zero: one unavailable
		{i(0), i(0), 5, 0, 1, false},
		{s("100%"), s("0%"), 3, 3, 0, false},
		{s("50%"), i(2), 0, 0, 2, false},
		{s("abc"), i(1), 3, 0, 0, true},
	} {
		t.Run(fmt.Sprintf("%s/%s/%d", tc.surge.String(), tc.unavailable.String(), tc.desired), func(t *testing.T) {
			gotS, gotU, err := ResolveFenceposts(&tc.surge, &tc.unavailable, tc.desired)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantS, gotS, "surge")
			assert.Equal(t, tc.wantU, gotU, "unavailable")
		})
	}
}

func deploy(replicas int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}},
			Template: template("img:2"),
		},
	}
}

func TestMaxSurgeAndUnavailable(t *testing.T) {
	for _, tc := range []struct {
		d              *appsv1.Deployment
		surge, unavail int32
		recreateIsZero bool
	}{
		{deploy(10, "25%", "25%"), 3, 2, true},
		{deploy(3, "5", "5"), 5, 3, true}, // unavailable capped at replicas
		{deploy(0, "1", "1"), 1, 0, true},
	} {
		assert.Equal(t, tc.surge, MaxSurge(tc.d))
		assert.Equal(t, tc.unavail, MaxUnavailable(tc.d))
		r := tc.d.DeepCopy()
		r.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		assert.Zero(t, MaxSurge(r))
		assert.Zero(t, MaxUnavailable(r))
	}
}

func rs(name string, replicas int32, available int32, created int, annotations ...string) *appsv1.ReplicaSet {
	ann := map[string]string{}
	for i := 0; i+1 < len(annotations); i += 2 {
		ann[annotations[i]] = annotations[i+1]
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Annotations: ann,
			CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0))},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas, Template: template("img:" + name)},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, AvailableReplicas: available, ReadyReplicas: available},
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	for _, tc := range []struct {
		name       string
		d          *appsv1.Deployment
		old, newRS int32
		want       int32
	}{
		{"first step takes the surge", deploy(10, "3", "2"), 10, 0, 3},
		{"full: no growth", deploy(10, "3", "2"), 10, 3, 3},
		{"room after old scaled down", deploy(10, "3", "2"), 8, 3, 5},
		{"never beyond replicas", deploy(10, "3", "2"), 0, 9, 10},
		{"percent surge rounds up", deploy(5, "25%", "0"), 5, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := rs("new", tc.newRS, 0, 2)
			got, err := NewRSNewReplicas(tc.d, []*appsv1.ReplicaSet{rs("old", tc.old, tc.old, 1), n}, n)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	r := deploy(4, "1", "1")
	r.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	got, err := NewRSNewReplicas(r, nil, rs("new", 0, 0, 1))
	require.NoError(t, err)
	assert.EqualValues(t, 4, got, "Recreate goes to full size at once")
}

func TestProportionalSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		rss  []*appsv1.ReplicaSet
		want map[string]int32
	}{
		{
			// The example of the Kubernetes documentation.
			name: "scale 10 to 15 mid-rollout",
			d:    deploy(15, "3", "2"),
			rss: []*appsv1.ReplicaSet{
				rs("old", 8, 8, 1, MaxReplicasAnnotation, "13"),
				rs("new", 5, 0, 2, MaxReplicasAnnotation, "13"),
			},
			want: map[string]int32{"old": 11, "new": 7},
		},
		{
			name: "scale down 10 to 5",
			d:    deploy(5, "3", "2"),
			rss: []*appsv1.ReplicaSet{
				rs("old", 8, 8, 1, MaxReplicasAnnotation, "13"),
				rs("new", 5, 0, 2, MaxReplicasAnnotation, "13"),
			},
			want: map[string]int32{"old": 5, "new": 3}, // max 8: 8*8/13=4.9 -> 5, 5*8/13=3.1 -> 3
		},
		{
			name: "scale to zero",
			d:    deploy(0, "3", "2"),
			rss: []*appsv1.ReplicaSet{
				rs("old", 8, 8, 1, MaxReplicasAnnotation, "13"),
				rs("new", 5, 0, 2, MaxReplicasAnnotation, "13"),
			},
			want: map[string]int32{"old": 0, "new": 0},
		},
		{
			name: "leftover goes to the largest; ties grow the newer first",
			d:    deploy(7, "0", "1"),
			rss: []*appsv1.ReplicaSet{
				rs("a", 2, 2, 1, MaxReplicasAnnotation, "4"),
				rs("b", 2, 2, 2, MaxReplicasAnnotation, "4"),
			},
			want: map[string]int32{"a": 3, "b": 4}, // 2*7/4=3.5 -> 4 each, capped by what is left
		},
		{
			name: "no annotation: the deployment's current size is the base",
			d:    func() *appsv1.Deployment { d := deploy(12, "0", "1"); d.Status.Replicas = 6; return d }(),
			rss:  []*appsv1.ReplicaSet{rs("a", 4, 4, 1), rs("b", 2, 2, 2)},
			want: map[string]int32{"a": 8, "b": 4},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ProportionalSizes(tc.d, tc.rss)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGetProportion(t *testing.T) {
	d := deploy(15, "3", "2")
	old := rs("old", 8, 8, 1, MaxReplicasAnnotation, "13")
	assert.EqualValues(t, 3, GetProportion(old, d, 5, 0))
	assert.EqualValues(t, 1, GetProportion(old, d, 5, 4), "bounded by what is left")
	assert.EqualValues(t, 0, GetProportion(old, d, 5, 5))
	assert.EqualValues(t, 0, GetProportion(rs("empty", 0, 0, 1), d, 5, 0))
	assert.EqualValues(t, 0, GetProportion(nil, d, 5, 0))
	down := deploy(5, "3", "2")
	assert.EqualValues(t, -3, GetProportion(old, down, -5, 0))
	assert.EqualValues(t, -1, GetProportion(old, down, -5, -4), "bounded by what is left")
}

func TestMaxScaledDown(t *testing.T) {
	d := deploy(10, "3", "2")
	newRS := rs("new", 3, 0, 2)
	all := []*appsv1.ReplicaSet{rs("old", 10, 10, 1), newRS}
	assert.EqualValues(t, 2, MaxScaledDown(d, all, newRS), "13 - 8 - 3")
	newRS.Status.AvailableReplicas = 3
	assert.EqualValues(t, 5, MaxScaledDown(d, all, newRS))
}

func TestSafeAvailable(t *testing.T) {
	stale := rs("old", 2, 4, 1) // scaled 4 -> 2, status not caught up
	assert.EqualValues(t, 2+3, safeAvailable([]*appsv1.ReplicaSet{stale, rs("new", 3, 3, 2), nil}))
}

func TestFindReplicaSets(t *testing.T) {
	d := deploy(3, "1", "1")
	d.Spec.Template = template("img:b")
	a, b, b2 := rs("a", 1, 1, 1), rs("b", 1, 1, 3), rs("b2", 1, 1, 2)
	b2.Spec.Template = template("img:b")
	b2.Spec.Template.Labels[HashLabel] = "x"
	assert.Equal(t, b2, FindNewReplicaSet(d, []*appsv1.ReplicaSet{a, b, b2}), "the oldest matching one")
	assert.Equal(t, []*appsv1.ReplicaSet{a, b}, FindOldReplicaSets(d, []*appsv1.ReplicaSet{a, b, b2}))
	assert.Nil(t, FindNewReplicaSet(d, []*appsv1.ReplicaSet{a}))

	assert.Equal(t, a, findActiveOrLatest(nil, []*appsv1.ReplicaSet{a, rs("z", 0, 0, 5)}))
	assert.Nil(t, findActiveOrLatest(b, []*appsv1.ReplicaSet{a}))
	z := rs("z", 0, 0, 5)
	assert.Equal(t, z, findActiveOrLatest(nil, []*appsv1.ReplicaSet{rs("y", 0, 0, 1), z}), "the newest when none is active")
}

func TestRevisions(t *testing.T) {
	rss := []*appsv1.ReplicaSet{
		rs("a", 0, 0, 1, RevisionAnnotation, "3"),
		rs("b", 0, 0, 2, RevisionAnnotation, "7"),
		rs("c", 0, 0, 3, RevisionAnnotation, "5"),
		rs("d", 0, 0, 4, RevisionAnnotation, "bad"),
	}
	assert.EqualValues(t, 7, maxRevision(rss))
	assert.EqualValues(t, 5, lastRevision(rss))
	SortByRevision(rss[:3])
	assert.Equal(t, []string{"a", "c", "b"}, []string{rss[0].Name, rss[1].Name, rss[2].Name})
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := deploy(10, "3", "2")
	d.Annotations = map[string]string{ChangeCauseAnnotation: "kubectl set image", corev1.LastAppliedConfigAnnotation: "{}",
		RevisionAnnotation: "4", "team": "a"}

	fresh := rs("new", 0, 0, 1)
	assert.True(t, SetNewReplicaSetAnnotations(d, fresh, "5", false))
	assert.Equal(t, map[string]string{ChangeCauseAnnotation: "kubectl set image", "team": "a", RevisionAnnotation: "5",
		DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"}, fresh.Annotations)
	assert.False(t, SetNewReplicaSetAnnotations(d, fresh, "5", true), "nothing to change")

	// A ReplicaSet rolled back to keeps its earlier revisions.
	back := rs("back", 0, 0, 1, RevisionAnnotation, "2", RevisionHistoryAnnotation, "1")
	assert.True(t, SetNewReplicaSetAnnotations(d, back, "6", true))
	assert.Equal(t, "6", back.Annotations[RevisionAnnotation])
	assert.Equal(t, "1,2", back.Annotations[RevisionHistoryAnnotation])
	_, sized := back.Annotations[DesiredReplicasAnnotation]
	assert.False(t, sized, "existing ReplicaSets get replica annotations when scaled")

	// Never lowers a revision.
	newer := rs("newer", 0, 0, 1, RevisionAnnotation, "9")
	SetNewReplicaSetAnnotations(d, newer, "6", true)
	assert.Equal(t, "9", newer.Annotations[RevisionAnnotation])
}

func TestAppendHistory(t *testing.T) {
	assert.Equal(t, "1", appendHistory("", "1"))
	assert.Equal(t, "1,2,3", appendHistory("1,2", "3"))
	long := strings.Repeat("1234,", 399) + "1234" // 1999 chars
	got := appendHistory(long, "99")
	assert.LessOrEqual(t, len(got), maxRevisionHistoryChars)
	assert.True(t, strings.HasSuffix(got, ",99"))
}

func TestRolloutStatusConditions(t *testing.T) {
	now := time.Unix(10_000, 0)
	d := deploy(2, "1", "0")
	d.Generation = 3
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	newRS := rs("new", 2, 1, 2)
	old := rs("old", 1, 1, 1)

	st := rolloutStatus([]*appsv1.ReplicaSet{old, newRS}, newRS, d, now)
	assert.EqualValues(t, 3, st.Replicas)
	assert.EqualValues(t, 2, st.UpdatedReplicas)
	assert.EqualValues(t, 2, st.AvailableReplicas)
	assert.EqualValues(t, 1, st.UnavailableReplicas)
	assert.EqualValues(t, 3, st.ObservedGeneration)
	p := GetCondition(st, appsv1.DeploymentProgressing)
	require.NotNil(t, p)
	assert.Equal(t, ReasonReplicaSetUpdated, p.Reason)
	assert.Equal(t, `ReplicaSet "new" is progressing.`, p.Message)
	a := GetCondition(st, appsv1.DeploymentAvailable)
	assert.Equal(t, ReasonMinimumReplicasAvailable, a.Reason)

	// No progress for longer than the deadline: timed out.
	d.Status = st
	later := now.Add(61 * time.Second)
	st2 := rolloutStatus([]*appsv1.ReplicaSet{old, newRS}, newRS, d, later)
	p = GetCondition(st2, appsv1.DeploymentProgressing)
	assert.Equal(t, ReasonProgressDeadlineExceeded, p.Reason)
	assert.Equal(t, corev1.ConditionFalse, p.Status)
	assert.Equal(t, time.Duration(-1), requeueForProgress(&appsv1.Deployment{Spec: d.Spec, Status: st2}, st2, later))
	assert.Equal(t, 51*time.Second, requeueForProgress(d, st, now.Add(10*time.Second)))

	// Complete.
	d.Status = st
	old.Spec.Replicas, old.Status = ptr.To[int32](0), appsv1.ReplicaSetStatus{}
	newRS.Status.AvailableReplicas = 2
	st3 := rolloutStatus([]*appsv1.ReplicaSet{old, newRS}, newRS, d, later)
	p = GetCondition(st3, appsv1.DeploymentProgressing)
	assert.Equal(t, ReasonNewReplicaSetAvailable, p.Reason)
	assert.Equal(t, `ReplicaSet "new" has successfully progressed.`, p.Message)

	// Below the minimum.
	newRS.Status.AvailableReplicas = 1
	st4 := calculateStatus([]*appsv1.ReplicaSet{newRS}, newRS, d, later)
	a = GetCondition(st4, appsv1.DeploymentAvailable)
	assert.Equal(t, corev1.ConditionFalse, a.Status)
	assert.Equal(t, ReasonMinimumReplicasUnavailable, a.Reason)
}
