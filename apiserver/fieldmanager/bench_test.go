package fieldmanager

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/podkit/podkit/apiserver/scheme"
)

// BenchmarkNew measures start-up: the first iteration pays for parsing the
// merge schema (once per process), the rest show the per-Manager cost.
func BenchmarkNew(b *testing.B) {
	s := scheme.New()
	for b.Loop() {
		if _, err := New(s, WithKinds(deployGVK, podGVK)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApply(b *testing.B) {
	m, _ := newManager(b)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	if err != nil {
		b.Fatal(err)
	}
	live = persisted(b, live, "1")
	patch := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default","labels":{"rev":"2"}},"spec":{"replicas":3}}`)
	b.Run("create", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("second-manager", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := m.Apply(ctx, live, deployGVK, patch, ApplyOptions{FieldManager: "other"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("no-op", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := m.Apply(ctx, live, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUpdate(b *testing.B) {
	m, _ := newManager(b)
	ctx := context.Background()
	created, err := m.Update(ctx, nil, newDeployment(b), deployGVK, UpdateOptions{FieldManager: "kubectl-create"})
	if err != nil {
		b.Fatal(err)
	}
	live := persisted(b, created, "1").(*appsv1.Deployment)
	b.Run("create", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Update(ctx, nil, newDeployment(b), deployGVK, UpdateOptions{UserAgent: kubectlUA}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("change", func(b *testing.B) {
		for b.Loop() {
			obj := live.DeepCopy()
			n := int32(4)
			obj.Spec.Replicas = &n
			if _, err := m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			obj := live.DeepCopy()
			obj.Status.ReadyReplicas = 3
			if _, err := m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: "kube-controller-manager", Subresource: "status"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
