package fake_test

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

// A pod whose container runs `testbox sleep 30` and prints a line, driven
// in virtual time: the container exits when the clock has moved 30s.
func Example() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := fake.New(
		fake.WithClock(clk),
		fake.WithPodCIDR(netip.MustParsePrefix("10.244.1.0/24")),
		// Scripted behaviour: "warmup" prints before sleeping; the rest
		// is the testbox vocabulary.
		fake.WithBehavior(func(sb *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
			b := fake.Interpret(sb, c)
			if c.Name == "warmup" {
				b.Stdout = append(b.Stdout, "warming up")
			}
			return b
		}),
	)
	if err != nil {
		panic(err)
	}
	sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{
		Pod: sandbox.PodMeta{Name: "web", Namespace: "default", UID: "8b0c"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("sandbox", sb.State, sb.IPs)

	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name:    "warmup",
		Command: []string{"/bin/testbox"},
		Args:    []string{"sleep", "30"},
	})
	if err != nil {
		panic(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		panic(err)
	}
	out, _ := r.Output(id)
	fmt.Println("printed:", out[0].Text)

	clk.Step(29 * time.Second)
	st, _ := r.ContainerStatus(ctx, id)
	fmt.Println("after 29s:", st.State)
	clk.Step(time.Second)
	st, _ = r.ContainerStatus(ctx, id)
	fmt.Println("after 30s:", st.State, st.ExitCode, st.Reason, st.FinishedAt.Sub(st.StartedAt))

	// Failure injection: the next creation fails.
	r.FailNext("CreateContainer", fmt.Errorf("image not unpacked"))
	_, err = r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{Name: "app", Command: []string{"/app"}})
	fmt.Println(err)

	// Output:
	// sandbox SANDBOX_READY [10.244.1.2]
	// printed: warming up
	// after 29s: CONTAINER_RUNNING
	// after 30s: CONTAINER_EXITED 0 Completed 30s
	// fake: injected CreateContainer failure: image not unpacked
}
