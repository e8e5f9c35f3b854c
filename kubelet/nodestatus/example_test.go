package nodestatus_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/kubelet/nodestatus"
)

// Example registers a node and reads back what the scheduler and the
// kubelet's admission see. A kubelet passes its real API client and
// nodestatus.HostMachine(stateDir).
func Example() {
	client := fake.NewClientset()
	c, err := nodestatus.New(nodestatus.Config{
		Client:    client,
		NodeName:  "node-1",
		PodCIDR:   "10.244.1.0/24",
		Machine:   &machine{},
		Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}},
		Reserved:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		Clock:     clocktesting.NewFakeClock(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)),
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	<-c.Registered()

	node := c.Node()
	fmt.Println("podCIDR:", c.PodCIDR())
	cpu, mem := node.Status.Allocatable[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceMemory]
	fmt.Println("allocatable cpu:", cpu.String(), "memory:", mem.String())
	for _, cond := range node.Status.Conditions {
		fmt.Printf("%s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	// Output:
	// podCIDR: 10.244.1.0/24
	// allocatable cpu: 1500m memory: 3932Mi
	// MemoryPressure=False KubeletHasSufficientMemory: kubelet has sufficient memory available
	// DiskPressure=False KubeletHasNoDiskPressure: kubelet has no disk pressure
	// PIDPressure=False KubeletHasSufficientPID: kubelet has sufficient PID available
	// Ready=True KubeletReady: kubelet is posting ready status
}
