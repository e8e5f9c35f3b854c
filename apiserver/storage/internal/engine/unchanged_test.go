package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

// semanticUnchanged is the reference the comparer must agree with: the
// whole objects under apiequality.Semantic, TypeMeta aside.
func semanticUnchanged(cur, next runtime.Object) bool {
	next = next.DeepCopyObject()
	next.GetObjectKind().SetGroupVersionKind(cur.GetObjectKind().GroupVersionKind())
	return apiequality.Semantic.DeepEqual(cur, next)
}

func TestUnchangedPodCases(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		same   bool
	}{
		{"identical", func(*corev1.Pod) {}, true},
		{"TypeMeta only", func(p *corev1.Pod) { p.APIVersion, p.Kind = "", "" }, true},
		{"quantity in another format", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.25")
		}, true},
		{"empty instead of nil", func(p *corev1.Pod) {
			p.Spec.NodeSelector, p.Status.Conditions, p.Finalizers = map[string]string{}, []corev1.PodCondition{}, []string{}
		}, true},
		{"creation time in another zone", func(p *corev1.Pod) {
			p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.In(time.FixedZone("X", 3600)))
		}, true},
		{"binding", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, false},
		{"phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, false},
		{"condition added", func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		}, false},
		{"managedFields bytes", func(p *corev1.Pod) {
			p.ManagedFields[0].FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}
		}, false},
		{"managedFields time", func(p *corev1.Pod) {
			later := metav1.NewTime(p.ManagedFields[0].Time.Add(time.Second))
			p.ManagedFields[0].Time = &later
		}, false},
		{"managedFields entry added", func(p *corev1.Pod) {
			p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubelet", Subresource: "status"})
		}, false},
		{"annotation value", func(p *corev1.Pod) { p.Annotations["kubectl.kubernetes.io/restartedAt"] = "now" }, false},
		{"annotation added", func(p *corev1.Pod) { p.Annotations["a"] = "" }, false},
		{"label removed", func(p *corev1.Pod) { delete(p.Labels, "app") }, false},
		{"finalizer", func(p *corev1.Pod) { p.Finalizers = []string{"example.com/f"} }, false},
		{"deletion", func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, false},
		{"generation", func(p *corev1.Pod) { p.Generation++ }, false},
		{"container image", func(p *corev1.Pod) { p.Spec.Containers[1].Image = "registry.example/proxy:1.0" }, false},
		{"quantity value", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("512Mi")
		}, false},
		{"probe period", func(p *corev1.Pod) { p.Spec.Containers[0].ReadinessProbe.PeriodSeconds++ }, false},
		{"owner controller flag", func(p *corev1.Pod) { f := false; p.OwnerReferences[0].Controller = &f }, false},
		{"grace period", func(p *corev1.Pod) { g := int64(0); p.Spec.TerminationGracePeriodSeconds = &g }, false},
		{"container status", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true}}
		}, false},
		{"creation time", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.Add(time.Second)) }, false},
	}
	var c comparer
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cur := semantictest.WorkloadPod()
			next := cur.DeepCopy()
			tc.change(next)
			require.Equal(t, tc.same, semanticUnchanged(cur, next), "reference")
			typeMeta := next.TypeMeta
			assert.Equal(t, tc.same, c.unchanged(cur, next))
			assert.Equal(t, typeMeta, next.TypeMeta, "TypeMeta restored")
		})
	}
}

// TestUpdateChangesAreWritten runs real updates through the engine: a
// change in status, spec or managedFields alone is written with a new
// revision; the same object again is not.
func TestUpdateChangesAreWritten(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, nil)
	_, err := e.Create(ctx, key("p"), func() *corev1.Pod { p := semantictest.WorkloadPod(); p.ResourceVersion = ""; return p }())
	require.NoError(t, err)
	steps := []struct {
		name    string
		change  func(p *corev1.Pod)
		written bool
	}{
		{"no-op", func(*corev1.Pod) {}, false},
		{"status", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, true},
		{"spec", func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, true},
		{"managedFields", func(p *corev1.Pod) { p.ManagedFields[0].Manager = "other" }, true},
		{"annotation", func(p *corev1.Pod) { p.Annotations["x"] = "y" }, true},
		{"quantity reformatted", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("0.25")
		}, false},
	}
	rev := "1"
	for _, s := range steps {
		out, err := e.Update(ctx, key("p"), func(cur runtime.Object) (runtime.Object, error) {
			s.change(cur.(*corev1.Pod))
			return cur, nil
		})
		require.NoError(t, err, s.name)
		got := out.(*corev1.Pod).ResourceVersion
		if s.written {
			assert.NotEqual(t, rev, got, s.name)
		} else {
			assert.Equal(t, rev, got, s.name)
		}
		rev = got
	}
}
