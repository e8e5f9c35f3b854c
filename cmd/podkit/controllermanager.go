package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/controllers"
	"github.com/podkit/podkit/internal/kubeclient"
	"github.com/podkit/podkit/internal/leader"
)

func newControllerManagerCommand() *cobra.Command {
	var kubeconfig, clusterCIDR string
	var maskSize, workers int
	var grace time.Duration
	var disable []string
	election := leader.DefaultOptions("kube-controller-manager")
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers: deployments, replicasets, garbage collection, namespaces, nodes, jobs, endpoints",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			var o controllers.Options
			if clusterCIDR != "" {
				if o.ClusterCIDR, err = netip.ParsePrefix(clusterCIDR); err != nil {
					return fmt.Errorf("--cluster-cidr: %w", err)
				}
			}
			o.NodeMaskSize, o.NodeMonitorGracePeriod, o.Disable = maskSize, grace, disable
			m, err := controllers.New(cmd.Context(), kubeclient.Protobuf(rc), controller.ManagerConfig{Workers: workers, Logger: slog.Default()}, o)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(kubeclient.Protobuf(rc))
			if err != nil {
				return err
			}
			slog.Info("podkit controller-manager running", "server", rc.Host)
			return leader.Run(cmd.Context(), client, election, slog.Default(), m.Run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&clusterCIDR, "cluster-cidr", "10.244.0.0/16", "pod address range node PodCIDRs are allocated from")
	f.IntVar(&maskSize, "node-cidr-mask-size", 24, "prefix length of each node's PodCIDR")
	f.DurationVar(&grace, "node-monitor-grace-period", 40*time.Second, "how long a node's lease may go unrenewed before it is marked Unknown")
	f.IntVar(&workers, "concurrent-syncs", controller.DefaultWorkers, "workers per controller")
	f.StringSliceVar(&disable, "disable", nil, fmt.Sprintf("controllers not to run (of %v)", controllers.Names))
	election.AddFlags(f)
	return cmd
}
