package leader_test

import (
	"context"
	"log"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/internal/leader"
)

// Example runs a component only while it holds the kube-scheduler Lease,
// as `podkit scheduler` does by default.
func Example() {
	rc, err := clientcmd.BuildConfigFromFlags("", "/etc/podkit/scheduler.kubeconfig")
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		log.Fatal(err)
	}
	err = leader.Run(context.Background(), client, leader.DefaultOptions("kube-scheduler"), slog.Default(),
		func(ctx context.Context) error {
			<-ctx.Done() // schedule until told to stop
			return nil
		})
	if err != nil {
		log.Fatal(err) // leader.ErrLost: exit and come back as a candidate
	}
}
