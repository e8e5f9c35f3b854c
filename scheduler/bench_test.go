package scheduler_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// benchWorkload shapes the pods of a benchmark.
type benchWorkload struct {
	name string
	pod  func(i, nodes int) *corev1.Pod
}

func benchPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%06d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-%06d", i))},
		Spec: corev1.PodSpec{SchedulerName: scheduler.DefaultSchedulerName, Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}},
		}}},
	}
}

// BenchWorkloads are the scheduler_perf-style workloads: plain requests,
// zone topology spread, and required anti-affinity on the hostname within
// groups sized to fit the cluster.
var benchWorkloads = []benchWorkload{
	{"basic", func(i, _ int) *corev1.Pod { return benchPod(i) }},
	{"spread", func(i, _ int) *corev1.Pod {
		p := benchPod(i)
		p.Labels = map[string]string{"app": fmt.Sprintf("a%d", i%10)}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
		}}
		return p
	}},
	{"antiaffinity", func(i, nodes int) *corev1.Pod {
		p := benchPod(i)
		p.Labels = map[string]string{"group": fmt.Sprintf("g%d", i/(nodes/2))}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}, TopologyKey: corev1.LabelHostname,
			}},
		}}
		return p
	}},
}

func benchNode(i int) *corev1.Node {
	name := fmt.Sprintf("node-%05d", i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3),
	}}}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("500"), // room for b.N pods
	}
	return n
}

// BenchmarkScheduleOne measures scheduling cycles (filter, score, assume)
// with the default profile, without an API server: binds confirm straight
// into the cache, as the informer would.
func BenchmarkScheduleOne(b *testing.B) {
	for _, w := range benchWorkloads {
		for _, nodes := range []int{100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/nodes=%d", w.name, nodes), func(b *testing.B) {
				var s *scheduler.Scheduler
				profile := plugins.DefaultProfile("")
				profile.Binder = scheduler.BindFunc(func(_ context.Context, pod *corev1.Pod, node string) error {
					return s.Cache().AddPod(pod)
				})
				var err error
				s, err = scheduler.New(scheduler.Config{Client: fake.NewClientset(), Profiles: []scheduler.Profile{profile}},
					scheduler.WithEventRecorders(func(string) record.EventRecorder { return &record.FakeRecorder{} }),
					scheduler.WithRandSeed(1))
				if err != nil {
					b.Fatal(err)
				}
				for i := range nodes {
					s.Cache().AddNode(benchNode(i))
				}
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					s.Queue().Add(w.pod(i, nodes))
					if err := s.ScheduleOne(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if _, pods, _ := s.Cache().Counts(); pods == 0 && b.N > 0 {
					b.Fatal("nothing scheduled")
				}
			})
		}
	}
}
