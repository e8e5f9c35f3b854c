package prober_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/kubelet/prober"
)

func ExampleManager() {
	// The container's health endpoint fails.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	m, err := prober.NewManager(prober.Config{}, prober.WithRand(func() float64 { return 0 }))
	if err != nil {
		panic(err)
	}
	defer m.Close()

	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "uid-1"
	pod.Spec.Containers = []corev1.Container{{
		Name: "app",
		LivenessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.Parse(port)}},
			FailureThreshold: 1,
		},
	}}
	m.AddPod(pod)
	// The kubelet started the container; probes connect to the pod IP.
	m.UpdateContainer(pod.UID, "app", "c0ffee", time.Now(), "127.0.0.1")

	u := <-m.Results()
	fmt.Println(u.Probe, u.Result, u.Changed)
	fmt.Println(u.Event+":", u.Message)
	// Output:
	// Liveness Failure true
	// Unhealthy: Liveness probe failed: HTTP probe failed with statuscode: 500
}
