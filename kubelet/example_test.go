package kubelet_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/kubelet/kubelettest"
	"github.com/podkit/podkit/sandbox/fake"
)

// A kubelet composed of stages: here the in-memory runtime, images and
// snapshots; on a real node sandbox/native, image.Service, overlay.Driver
// and cgroups.Tree take their places.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := memory.New()
	cfg, _ := app.DefaultConfig(st, slog.New(slog.DiscardHandler))
	srv, _ := apiserver.New(*cfg)
	_ = srv.Bootstrap(ctx)
	client := kubernetes.NewForConfigOrDie(inproc.RESTConfig(srv.Handler()))

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	node, _ = client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("2Gi"), corev1.ResourcePods: resource.MustParse("110")}
	_, _ = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})

	runtime, _ := fake.New()
	images := kubelettest.NewImages()
	_ = images.Add("example.com/app:1", v1.Config{Entrypoint: []string{"/bin/testbox"}})
	dir, _ := os.MkdirTemp("", "kubelet-example-")
	defer os.RemoveAll(dir)
	k, err := kubelet.New(kubelet.Config{
		NodeName: "node-a", Client: client, Runtime: runtime,
		Images: images, Snapshots: kubelettest.NewSnapshots(),
		RootDir: dir + "/root", LogDir: dir + "/logs",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{
			{Name: "app", Image: "example.com/app:1", Args: []string{"sleep", "inf"}}}}}
	_, _ = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			fmt.Println(p.Status.Phase, p.Status.ContainerStatuses[0].Ready)
			break
		}
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// Running true
	// <nil>
}
