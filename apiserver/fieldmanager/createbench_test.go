package fieldmanager

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

// kubeletEvent returns a core/v1 Event as client-go's record package
// writes it for a kubelet: reason Pulled, Created or Started about a
// container of pod.
func kubeletEvent(i int, reason, pod string) *corev1.Event {
	t := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%016x", pod, i), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod,
			UID: "0b7c6f0e-1d2a-4c53-9a52-6f1d5b1c1e01", APIVersion: "v1", ResourceVersion: "12", FieldPath: "spec.containers{web}"},
		Reason:         reason,
		Message:        "Container image \"registry.example/web:1.2.3\" already present on machine",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: t, LastTimestamp: t, Count: 1, Type: corev1.EventTypeNormal,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
}

// createPod returns a pod as a ReplicaSet controller creates it.
func createPod(i int) *corev1.Pod {
	pod := semantictest.WorkloadPod()
	pod.ManagedFields, pod.ResourceVersion, pod.UID = nil, "", ""
	pod.Name = fmt.Sprintf("web-7d4b9c8f6d-%05d", i)
	pod.CreationTimestamp = metav1.Time{}
	return pod
}

// BenchmarkCreate records creates of a kubelet's Event and of a
// ReplicaSet's pod, one after another through one Manager as the API
// server does, through the fast path and through the library only. Each
// op first copies the object (the handler decodes a fresh one).
func BenchmarkCreate(b *testing.B) {
	eventGVK := corev1.SchemeGroupVersion.WithKind("Event")
	event, pod := kubeletEvent(0, "Pulled", "web-1"), createPod(0)
	for _, bc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  func(i int) runtime.Object
		mgr  string
	}{
		{"event", eventGVK, func(i int) runtime.Object {
			ev := event.DeepCopy()
			ev.Name = fmt.Sprintf("web-1.%016x", i)
			return ev
		}, "kubelet"},
		{"pod", podGVK, func(i int) runtime.Object {
			p := pod.DeepCopy()
			p.Name = fmt.Sprintf("web-7d4b9c8f6d-%05d", i)
			return p
		}, "kube-controller-manager"},
	} {
		for _, path := range []string{"fast", "library"} {
			b.Run(bc.name+"/"+path, func(b *testing.B) {
				m, _ := newManager(b)
				m.slowCreate = path == "library"
				ctx := context.Background()
				i := 0
				measure(b, func() error {
					i++
					_, err := m.Update(ctx, nil, bc.obj(i), bc.gvk, UpdateOptions{FieldManager: bc.mgr})
					return err
				})
			})
		}
	}
}
