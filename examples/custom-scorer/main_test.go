package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/scheduler"
)

func TestCustomPlugins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := memory.New()
	defer st.Close()
	srv, err := apiserver.New(apiserver.Config{Store: st, Logger: quiet})
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(ctx))
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	require.NoError(t, err)

	addNode := func(name string, labels, annotations map[string]string) {
		n, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}, metav1.CreateOptions{})
		require.NoError(t, err)
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	addNode("hdd", map[string]string{DiskLabel: "hdd"}, nil)
	addNode("nvme", map[string]string{DiskLabel: "nvme"}, nil)
	addNode("nvme-serviced", map[string]string{DiskLabel: "nvme"}, map[string]string{MaintenanceAnnotation: "until friday"})

	s, err := newScheduler(client, scheduler.WithLogger(quiet))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()

	for _, name := range []string{"a", "b", "c"} {
		_, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, name := range []string{"a", "b", "c"} {
		var node string
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			node = p.Spec.NodeName
			return node != "", nil
		}))
		assert.Equal(t, "nvme", node, "pod %s: fast disk preferred, serviced node filtered out", name)
	}
}
