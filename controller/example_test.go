package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/deployment"
	"github.com/podkit/podkit/controller/replicaset"
)

// A controller manager with the Deployment and ReplicaSet controllers
// turns a Deployment into a ReplicaSet named after its pod template hash,
// and that into pods (Pending here: no scheduler or kubelet runs).
func ExampleManager() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)

	// An in-process API server.
	st := memory.New()
	defer st.Close()
	cfg, _ := app.DefaultConfig(st, log)
	srv, _ := apiserver.New(*cfg)
	_ = srv.Bootstrap(ctx)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	client := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL, QPS: -1})

	m, _ := controller.NewManager(controller.ManagerConfig{Client: client, Logger: log})
	_ = m.Register(deployment.Name, deployment.NewFunc())
	_ = m.Register(replicaset.Name, replicaset.NewFunc())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	labels := map[string]string{"app": "web"}
	_, err := client.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}

	var rs appsv1.ReplicaSet
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Status.Replicas != 2 {
			return false, nil
		}
		rs = list.Items[0]
		return true, nil
	})
	pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	fmt.Println("replicaset named web-<hash>:", rs.Name == "web-"+rs.Labels[deployment.HashLabel])
	fmt.Println("revision:", rs.Annotations[deployment.RevisionAnnotation])
	fmt.Println("pods:", len(pods.Items), "named after it:", strings.HasPrefix(pods.Items[0].Name, rs.Name+"-"))
	cancel()
	fmt.Println("manager stopped:", <-done)
	// Output:
	// replicaset named web-<hash>: true
	// revision: 1
	// pods: 2 named after it: true
	// manager stopped: <nil>
}
