package fieldmanager

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/internal/procstat"
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

// BenchmarkUpdate records a Deployment's create, a change of its spec and
// a status write, through the fast paths and through the library only
// ("library"); cpu-ns/op is the process's CPU time (user and system, GC
// included) per write.
func BenchmarkUpdate(b *testing.B) {
	for _, path := range []string{"fast", "library"} {
		m, _ := newManager(b)
		m.slowCreate, m.slowUpdate = path == "library", path == "library"
		ctx := context.Background()
		created, err := m.Update(ctx, nil, newDeployment(b), deployGVK, UpdateOptions{FieldManager: "kubectl-create"})
		if err != nil {
			b.Fatal(err)
		}
		live := persisted(b, created, "1").(*appsv1.Deployment)
		b.Run("create/"+path, func(b *testing.B) {
			measure(b, func() error {
				_, err := m.Update(ctx, nil, newDeployment(b), deployGVK, UpdateOptions{UserAgent: kubectlUA})
				return err
			})
		})
		b.Run("change/"+path, func(b *testing.B) {
			measure(b, func() error {
				obj := live.DeepCopy()
				n := int32(4)
				obj.Spec.Replicas = &n
				_, err := m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: "kube-controller-manager"})
				return err
			})
		})
		b.Run("status/"+path, func(b *testing.B) {
			measure(b, func() error {
				obj := live.DeepCopy()
				obj.Status.ReadyReplicas = 3
				_, err := m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: "kube-controller-manager", Subresource: "status"})
				return err
			})
		})
	}
}

// BenchmarkPodStatusUpdate mirrors the kubelet's PUT pods/NAME/status: a
// pod created by kube-controller-manager and bound, then a whole status
// through the status subresource ("pending": the containers run but are
// not ready yet, the first write; "ready": the next one, over the
// kubelet's own entry), through the fast path and through the library
// only. Each write includes the copy of the request (the handler decodes
// a fresh object).
func BenchmarkPodStatusUpdate(b *testing.B) {
	for _, path := range []string{"fast", "library"} {
		m, _ := newManager(b)
		m.slowUpdate = path == "library"
		ctx := context.Background()
		opts := UpdateOptions{UserAgent: "kubelet/v1.33.0 (linux/amd64) kubernetes/podkit", Subresource: "status"}
		bound := boundPod(b, m)
		first, err := m.Update(ctx, bound, kubeletStatus(bound, false), podGVK, opts)
		if err != nil {
			b.Fatal(err)
		}
		running := persisted(b, first, "43").(*corev1.Pod)
		for _, bc := range []struct {
			name string
			live *corev1.Pod
			obj  *corev1.Pod
		}{
			{"pending", bound, kubeletStatus(bound, false)},
			{"ready", running, kubeletStatus(running, true)},
		} {
			b.Run(bc.name+"/"+path, func(b *testing.B) {
				measure(b, func() error {
					_, err := m.Update(ctx, bc.live, bc.obj.DeepCopy(), podGVK, opts)
					return err
				})
			})
		}
	}
}

// measure runs write b.N times and reports the process's CPU time per
// write besides the wall clock.
func measure(b *testing.B, write func() error) {
	b.ReportAllocs()
	cpu0 := procstat.SelfCPU()
	for b.Loop() {
		if err := write(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(procstat.SelfCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
