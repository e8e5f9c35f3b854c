package apiserver_test

// Benchmarks of the pod writes storage.OwningWriter saves copies on that
// BenchmarkPodWrite and BenchmarkCreateAdmitted leave out: the kubelet's
// pods/status PUT (client-go's UpdateStatus) and a ReplicaSet's create
// with generateName, both in protobuf as client-go sends them, one after
// another through the handler over the memory store.

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/internal/qos"
)

// BenchmarkPodOwnedWrites measures a pods/status PUT (a changed podIP,
// never a no-op) over 100 pods created before the timer starts, and a pod
// create with generateName.
func BenchmarkPodOwnedWrites(b *testing.B) {
	b.Run("status-put-protobuf", func(b *testing.B) {
		env := newBenchEnv(b, openStore(b, "memory"))
		const pods = 100
		createPods(b, env.handler, pods)
		// Two bodies per pod, alternating: every PUT changes the pod.
		var bodies [2 * pods][]byte
		for i := range bodies {
			p := benchPod(fmt.Sprintf("web-%08d", i%pods), 0)
			p.Namespace = benchNamespace
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: qos.PodQOSClass(p),
				PodIP: fmt.Sprintf("10.244.%d.%d", i/pods, 1+i%pods)}
			bodies[i] = encodeAs(b, p, runtime.ContentTypeProtobuf)
		}
		runSequential(b, func(i int) error {
			name := fmt.Sprintf("web-%08d", i%pods)
			body := bodies[(i/pods%2)*pods+i%pods]
			return serveAs(env.handler, http.MethodPut, "/api/v1/namespaces/"+benchNamespace+"/pods/"+name+"/status",
				runtime.ContentTypeProtobuf, body, http.StatusOK)
		})
	})
	b.Run("create-generatename-protobuf", func(b *testing.B) {
		env := newBenchEnv(b, openStore(b, "memory"))
		p := benchPod("", 0)
		p.GenerateName = "web-6d8f9c7b5d-"
		body := encodeAs(b, p, runtime.ContentTypeProtobuf)
		runSequential(b, func(int) error {
			return serveAs(env.handler, http.MethodPost, "/api/v1/namespaces/"+benchNamespace+"/pods",
				runtime.ContentTypeProtobuf, body, http.StatusCreated)
		})
	})
}
