package deployment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllertest"
	"github.com/podkit/podkit/controller/deployment"
	"github.com/podkit/podkit/controller/replicaset"
)

// BenchmarkDeploymentAvailable measures the time from creating a
// Deployment of n replicas to a status with n available replicas, through
// both controllers, the in-process API server over HTTP and a fake kubelet
// (10 fake nodes) that binds pods and reports them Running and Ready.
//
//	go test ./controller/deployment -run '^$' -bench DeploymentAvailable -benchtime 3x
func BenchmarkDeploymentAvailable(b *testing.B) {
	for _, n := range []int32{100, 1000} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			c := controllertest.NewCluster(b)
			nodes := make([]string, 10)
			for i := range nodes {
				nodes[i] = fmt.Sprintf("node-%d", i)
			}
			controllertest.StartFakeKubelet(b, c.Client, controllertest.KubeletConfig{Nodes: nodes, Schedule: true, Workers: 16})
			c.StartManager(b, controller.ManagerConfig{Workers: 5},
				controllertest.Registration{Name: deployment.Name, New: deployment.NewFunc()},
				controllertest.Registration{Name: replicaset.Name, New: replicaset.NewFunc(replicaset.WithBurstReplicas(int(n)))},
			)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				ns := fmt.Sprintf("bench-%d", i)
				_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				require.NoError(b, err)
				d := newDeployment("web", n, "img:1")
				d.Namespace = ns
				w, err := c.Client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "web").String()})
				require.NoError(b, err)
				b.StartTimer()

				_, err = c.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
				require.NoError(b, err)
				waitAvailableWatch(b, w, n)

				b.StopTimer()
				w.Stop()
				cleanupNamespace(b, c, ns)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
		})
	}
}

func waitAvailableWatch(b *testing.B, w watch.Interface, n int32) {
	timeout := time.After(10 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(b, ok, "watch closed")
			d, isD := ev.Object.(*appsv1.Deployment)
			if isD && d.Status.AvailableReplicas == n && d.Status.UpdatedReplicas == n {
				return
			}
		case <-timeout:
			b.Fatalf("%d replicas not available in time", n)
		}
	}
}

// cleanupNamespace removes what an iteration made (no garbage collector
// runs in this benchmark).
func cleanupNamespace(b *testing.B, c *controllertest.Cluster, ns string) {
	ctx := context.Background()
	zero := int64(0)
	require.NoError(b, c.Client.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	require.NoError(b, c.Client.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	require.NoError(b, c.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}))
}
