package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/internal/kubeclient"
	"github.com/podkit/podkit/internal/leader"
	"github.com/podkit/podkit/scheduler"
	"github.com/podkit/podkit/scheduler/plugins"
)

func newSchedulerCommand() *cobra.Command {
	var kubeconfig, config, metricsAddr string
	var parallelism, maxBindings int
	var percentage int32
	election := leader.DefaultOptions("kube-scheduler")
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler: queue → filter → score → bind, against any Kubernetes API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			client, err := kubernetes.NewForConfig(kubeclient.Protobuf(rc))
			if err != nil {
				return err
			}
			var profiles []scheduler.Profile
			var opts []scheduler.Option
			if config != "" {
				if profiles, opts, err = plugins.ProfilesFromConfigFile(config, nil); err != nil {
					return err
				}
			} else {
				profiles = []scheduler.Profile{plugins.DefaultProfile("")}
			}
			opts = append(opts, scheduler.WithLogger(slog.Default()))
			if parallelism > 0 {
				opts = append(opts, scheduler.WithParallelism(parallelism))
			}
			if percentage > 0 {
				opts = append(opts, scheduler.WithPercentageOfNodesToScore(percentage))
			}
			if maxBindings > 0 {
				opts = append(opts, scheduler.WithMaxInFlightBindings(maxBindings))
			}
			s, err := scheduler.New(scheduler.Config{Client: client, Profiles: profiles}, opts...)
			if err != nil {
				return err
			}
			if metricsAddr != "" {
				if err := serveMetrics(cmd.Context(), metricsAddr, promhttp.HandlerFor(s.Gatherer(), promhttp.HandlerOpts{})); err != nil {
					return err
				}
			}
			slog.Info("podkit scheduler running", "server", rc.Host, "profiles", len(profiles))
			return leader.Run(cmd.Context(), client, election, slog.Default(), s.Run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&config, "config", "", "KubeSchedulerConfiguration-style YAML with profiles")
	f.StringVar(&metricsAddr, "metrics-bind-address", "", "serve Prometheus metrics at this address (e.g. 127.0.0.1:10259)")
	f.IntVar(&parallelism, "parallelism", 0, "nodes evaluated in parallel (0: default)")
	f.Int32Var(&percentage, "percentage-of-nodes-to-score", 0, "percentage of nodes to score (0: adaptive, like Kubernetes)")
	f.IntVar(&maxBindings, "max-in-flight-bindings", 0, "bindings in flight at once (0: default)")
	election.AddFlags(f)
	return cmd
}

// serveMetrics serves h at /metrics on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, h http.Handler) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics server", "err", err)
		}
	}()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return nil
}
