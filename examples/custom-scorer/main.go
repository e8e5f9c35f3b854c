// Command custom-scorer runs podkit's scheduler with the default plugins
// plus two of its own, registered in a few lines:
//
//   - a Scorer that prefers nodes labelled example.com/disk=nvme;
//   - a Filter that keeps pods off nodes annotated example.com/maintenance.
//
// It schedules the pods of any Kubernetes API server (podkit's or not):
//
//	go run ./examples/custom-scorer --kubeconfig ~/.kube/config
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

// Labels and annotations the example plugins read.
const (
	DiskLabel             = "example.com/disk"
	MaintenanceAnnotation = "example.com/maintenance"
)

// preferNVMe scores nodes with fast disks at the top of the range.
func preferNVMe(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) (int64, error) {
	if n.Node().Labels[DiskLabel] == "nvme" {
		return scheduler.MaxNodeScore, nil
	}
	return scheduler.MinNodeScore, nil
}

// notInMaintenance rejects nodes being serviced; the reason shows in the
// FailedScheduling event ("0/3 nodes are available: 3 node(s) under maintenance.").
func notInMaintenance(_ context.Context, _ *scheduler.CycleState, _ *corev1.Pod, n *scheduler.NodeInfo) error {
	if _, ok := n.Node().Annotations[MaintenanceAnnotation]; ok {
		return scheduler.Unschedulable("node(s) under maintenance")
	}
	return nil
}

// newScheduler builds the default profile plus the two plugins.
func newScheduler(client kubernetes.Interface, opts ...scheduler.Option) (*scheduler.Scheduler, error) {
	profile := plugins.DefaultProfile(scheduler.DefaultSchedulerName)
	profile.Plugins = append(profile.Plugins,
		scheduler.PluginSpec{Name: "NotInMaintenance", Plugin: scheduler.FilterFunc(notInMaintenance)},
		scheduler.PluginSpec{Name: "PreferNVMe", Plugin: scheduler.ScoreFunc(preferNVMe), Weight: 5},
	)
	return scheduler.New(scheduler.Config{Client: client, Profiles: []scheduler.Profile{profile}}, opts...)
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to schedule")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-scorer:", err)
		os.Exit(2)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-scorer:", err)
		os.Exit(2)
	}
	s, err := newScheduler(client, scheduler.WithLogger(slog.Default()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "custom-scorer:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "custom-scorer:", err)
		os.Exit(1)
	}
}
