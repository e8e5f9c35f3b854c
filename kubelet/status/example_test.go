package status_test

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

func ExampleGenerate() {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "uid-1"
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.27"}}
	now := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

	// The app container crashed once and is backing off.
	s := status.Generate(status.Input{
		Pod:     pod,
		Sandbox: &sandbox.Sandbox{ID: "sb1", State: sandbox.SandboxReady, IPs: []netip.Addr{netip.MustParseAddr("10.1.0.5")}},
		Containers: []*sandbox.ContainerStatus{{
			ID: "c1", Name: "app", State: sandbox.ContainerStateExited, ExitCode: 1, Reason: sandbox.ReasonError,
			CreatedAt: now, StartedAt: now, FinishedAt: now.Add(2 * time.Second),
		}},
		Waiting: map[string]status.Waiting{"app": {
			Reason:  status.ReasonCrashLoopBackOff,
			Message: status.CrashLoopBackOffMessage(10*time.Second, "app", pod),
		}},
		NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.1.10")},
	})
	s = status.Merge(pod.Status, s, now.Add(3*time.Second))

	fmt.Println(s.Phase, s.PodIP, s.QOSClass)
	for _, c := range s.Conditions {
		fmt.Println(strings.TrimSpace(fmt.Sprintln(c.Type, c.Status, c.Reason, c.Message)))
	}
	app := s.ContainerStatuses[0]
	fmt.Println(app.State.Waiting.Reason+":", app.State.Waiting.Message)
	fmt.Println("last:", app.LastTerminationState.Terminated.Reason, app.LastTerminationState.Terminated.ExitCode, app.ContainerID)
	// Output:
	// Running 10.1.0.5 BestEffort
	// PodReadyToStartContainers True
	// Initialized True
	// Ready False ContainersNotReady containers with unready status: [app]
	// ContainersReady False ContainersNotReady containers with unready status: [app]
	// PodScheduled True
	// CrashLoopBackOff: back-off 10s restarting failed container=app pod=web_default(uid-1)
	// last: Error 1 podkit://c1
}
