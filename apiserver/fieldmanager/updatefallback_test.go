package fieldmanager

import (
	"bytes"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// entries edits the stored object's managedFields.
func entries(f func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry) func(runtime.Object) {
	return func(obj runtime.Object) {
		a := obj.(metav1.Object)
		a.SetManagedFields(f(a.GetManagedFields()))
	}
}

// relabel is a write of one label by manager.
func relabel(manager, value string) step {
	return step{name: manager, opts: UpdateOptions{FieldManager: manager}, change: func(obj runtime.Object) {
		obj.(metav1.Object).GetLabels()[manager] = value
	}}
}

// fallbackCases are writes outside the fast path, which must come out
// exactly as the library writes them, and edge cases it takes.
func fallbackCases() []updateCase {
	label := as(func(p *corev1.Pod) { p.Labels["x"] = "y" })
	canonical := func(s *fieldpath.Set) []byte {
		raw, err := s.ToJSON()
		if err != nil {
			panic(err)
		}
		return raw
	}
	atomicChild := canonical(fieldpath.NewSet(fieldpath.MakePathOrDie("spec", "tolerations", "x")))
	capped := updateCase{name: "more than ten Update entries", obj: workloadPod, creator: "creator"}
	for i := range 10 {
		s := relabel(fmt.Sprintf("m%d", i), "1")
		s.slow = i == 9 // the eleventh Update entry: the library merges the oldest
		capped.steps = append(capped.steps, s)
	}
	capped.steps = append(capped.steps, relabel("m1", "2"), step{name: "new manager", opts: UpdateOptions{FieldManager: "m10"}, change: label, slow: true})
	return []updateCase{capped, {
		name: "request managedFields", obj: workloadPod, creator: "creator",
		steps: []step{
			{name: "replaced", opts: UpdateOptions{FieldManager: "editor"}, slow: true, change: as(func(p *corev1.Pod) {
				p.ManagedFields[0].Manager = "someone-else"
				p.Labels["x"] = "y"
			})},
			{name: "ignored through status", opts: kubelet, change: as(func(p *corev1.Pod) {
				p.ManagedFields[0].Manager = "someone-else"
				p.Status.Phase = corev1.PodRunning
			})},
			{name: "reset", opts: UpdateOptions{FieldManager: "editor"}, change: as(func(p *corev1.Pod) {
				p.ManagedFields = []metav1.ManagedFieldsEntry{{}}
			})},
			{name: "untracked object", opts: UpdateOptions{FieldManager: "editor"}, change: label},
		},
	}, {
		name: "stored entries the fast path does not take", obj: workloadPod, creator: "creator",
		steps: []step{
			{name: "bind", stored: bind},
			{name: "kubelet", opts: kubelet, change: kubeletWrites(true)},
			{name: "entry without time or fields", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				es[0].Time = nil
				return append(es, metav1.ManagedFieldsEntry{Manager: "empty", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1"})
			})},
			{name: "taken", opts: kcm, change: label},
			{name: "not canonical", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				// (Leading white space would make the library panic.)
				es[0].FieldsV1.Raw = bytes.Replace(es[0].FieldsV1.Raw, []byte(`":{`), []byte(`": {`), 1)
				return es
			})},
			{name: "re-encoded by the library", opts: kubelet, change: kubeletWrites(false), slow: true},
			{name: "needs reconciling", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				return append(es, metav1.ManagedFieldsEntry{Manager: "old-schema", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: atomicChild}})
			})},
			{name: "reconciled by the library", opts: kcm, change: label, slow: true},
			{name: "twice the same manager", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				return append(es, *es[0].DeepCopy())
			})},
			{name: "merged by the library", opts: kcm, change: label, slow: true},
			{name: "another apiVersion", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				es[0].APIVersion = "v2"
				return es
			})},
			{name: "dropped by the library", opts: kcm, change: label, slow: true},
			{name: "bad operation", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				es[0].Operation = "Patch"
				return es
			})},
			{name: "untracked by the library", opts: kcm, change: label, slow: true},
		},
	}, {
		name: "values the fast path does not take", obj: workloadPod, creator: "creator",
		steps: []step{
			{name: "manager not UTF-8", opts: UpdateOptions{FieldManager: "bad\xffname"}, change: label, slow: true},
		},
	}, {
		name: "invalid object", obj: fromYAML(&corev1.ServiceAccount{}, `
metadata: {name: sa, namespace: default}
secrets: [{name: token}]
`), creator: "creator",
		steps: []step{
			{name: "list item without its key", opts: UpdateOptions{FieldManager: "editor"}, slow: true, change: as(func(sa *corev1.ServiceAccount) {
				sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Namespace: "x"})
			})},
			{name: "stored anyway", stored: func(obj runtime.Object) {
				sa := obj.(*corev1.ServiceAccount)
				sa.Secrets = append(sa.Secrets, corev1.ObjectReference{Namespace: "x"})
			}},
			{name: "live not valid", opts: UpdateOptions{FieldManager: "editor"}, slow: true, change: as(func(sa *corev1.ServiceAccount) {
				sa.Secrets = sa.Secrets[:1]
			})},
			{name: "valid again", opts: UpdateOptions{FieldManager: "editor"}, change: as(func(sa *corev1.ServiceAccount) {
				sa.Labels = map[string]string{"x": "y"}
			})},
		},
	}, {
		name: "apply entries", obj: fromYAML(&appsv1.Deployment{}, deployYAML), creator: "creator",
		steps: []step{
			{name: "apply", opts: UpdateOptions{FieldManager: "kubectl"}, apply: deployYAML},
			{name: "update over them", opts: kcm, change: as(func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32) })},
			{name: "status apply", opts: UpdateOptions{FieldManager: "kubectl", Subresource: "status"},
				apply: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"status":{"replicas":1}}`},
			{name: "status update over it", opts: kcmStatus, change: as(func(d *appsv1.Deployment) { d.Status.Replicas = 2 })},
			{name: "update by the applier's name", opts: UpdateOptions{FieldManager: "kubectl"}, change: as(func(d *appsv1.Deployment) {
				d.Spec.MinReadySeconds = 5
			})},
		},
	}, {
		name: "order of entries", obj: workloadPod, creator: "creator",
		steps: []step{
			{name: "b", opts: UpdateOptions{FieldManager: "b"}, change: label},
			{name: "a", opts: UpdateOptions{FieldManager: "a", Subresource: "status"}, change: as(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
			{name: "c", opts: UpdateOptions{FieldManager: "c"}, change: as(func(p *corev1.Pod) { p.Labels["c"] = "c" })},
			{name: "times tied in the future, one missing", stored: entries(func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
				future := metav1.NewTime(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC))
				for i := range es {
					es[i].Time = &future
				}
				es[len(es)-1].Time = nil
				return es
			})},
			{name: "written before them", opts: UpdateOptions{FieldManager: "d"}, change: as(func(p *corev1.Pod) { p.Labels["d"] = "d" })},
			{name: "after an apply", apply: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d4b9c8f6d-x2x9k","namespace":"default","labels":{"e":"e"}}}`,
				opts: UpdateOptions{FieldManager: "e"}},
			{name: "b again", opts: UpdateOptions{FieldManager: "b"}, change: as(func(p *corev1.Pod) { p.Labels["x"] = "z" })},
		},
	}}
}
