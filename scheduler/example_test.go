package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// A scheduler with the default profile plus a custom Scorer, against an
// in-process API server.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _ := apiserver.New(apiserver.Config{Store: memory.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	_ = srv.Bootstrap(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL, QPS: -1})

	// Two nodes; the kubelet reports their allocatable through nodes/status.
	for _, name := range []string{"worker-1", "worker-2"} {
		n, _ := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
		_, _ = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	}

	// A custom Scorer: prefer worker-1, weighted above the defaults.
	preferWorker1 := scheduler.ScoreFunc(func(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
		if n.Name() == "worker-1" {
			return scheduler.MaxNodeScore, nil
		}
		return 0, nil
	})
	profile := plugins.DefaultProfile(scheduler.DefaultSchedulerName)
	profile.Plugins = append(profile.Plugins, scheduler.PluginSpec{Name: "PreferWorker1", Plugin: preferWorker1, Weight: 10})

	s, err := scheduler.New(scheduler.Config{Client: client, Profiles: []scheduler.Profile{profile}},
		scheduler.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "my-pod", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
	_, _ = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err = client.CoreV1().Pods("default").Get(ctx, "my-pod", metav1.GetOptions{})
		return err == nil && pod.Spec.NodeName != "", nil
	})
	fmt.Printf("%s/%s -> %s\n", pod.Namespace, pod.Name, pod.Spec.NodeName)
	cancel()
	<-done
	// Output: default/my-pod -> worker-1
}
