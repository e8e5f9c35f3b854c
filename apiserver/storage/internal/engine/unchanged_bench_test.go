package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

// BenchmarkUnchanged measures the no-op check of an update: a pod compared
// with an identical copy, and with copies changed as pods/binding and a
// kubelet's status patch change them.
func BenchmarkUnchanged(b *testing.B) {
	cur := semantictest.WorkloadPod()
	cases := map[string]func(p *corev1.Pod){
		"noop":    func(*corev1.Pod) {},
		"binding": func(p *corev1.Pod) { p.Spec.NodeName = "node-1" },
		"status":  func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning },
		"managedFields": func(p *corev1.Pod) {
			p.ManagedFields[0].FieldsV1 = &metav1.FieldsV1{Raw: append([]byte(nil), p.ManagedFields[0].FieldsV1.Raw...)}
			p.ManagedFields[0].FieldsV1.Raw[2] = 'g'
		},
	}
	for _, name := range []string{"noop", "binding", "status", "managedFields"} {
		b.Run(name, func(b *testing.B) {
			next := cur.DeepCopy()
			cases[name](next)
			want := name == "noop"
			var c comparer
			b.ReportAllocs()
			for b.Loop() {
				if c.unchanged(cur, next) != want {
					b.Fatalf("unchanged = %v, want %v", !want, want)
				}
			}
		})
	}
}
