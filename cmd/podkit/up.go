package main

import (
	"context"
	"debug/elf"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/podkit/podkit"
)

func newUpCommand() *cobra.Command {
	var cfg podkit.ClusterConfig
	var clusterCIDR string
	var svc serviceFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole cluster in this process: API server, controllers, scheduler, registry and N nodes",
		Long: `Run an all-in-one cluster on embedded defaults: bbolt in --data-dir, an OCI registry on
127.0.0.1 seeded with the demo image (demo/web:1, from demo-web next to this binary) and busybox
(when /bin/busybox is static), a kubeconfig for kubectl. Ctrl-C stops every pod gracefully and
leaves nothing on the host; the next podkit up on the same data dir resumes the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			cfg.Logger = slog.Default()
			if clusterCIDR != "" {
				p, err := netip.ParsePrefix(clusterCIDR)
				if err != nil {
					return fmt.Errorf("--cluster-cidr: %w", err)
				}
				cfg.ClusterCIDR = p
			}
			if cfg.Kubeconfig == "" {
				cfg.Kubeconfig = filepath.Join(cfg.DataDir, "kubeconfig")
			}
			sc, err := svc.config()
			if err != nil {
				return err
			}
			cfg.ServiceCIDR, cfg.DNSUpstreams = sc.ServiceCIDR, sc.DNSUpstreams
			run, ctx, err := startCluster(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			c := run.Cluster
			kc, _ := filepath.Abs(cfg.Kubeconfig)
			fmt.Fprintf(cmd.OutOrStdout(), `podkit is up in %s: API server %s, %d node(s), registry %s
  images: %v
  try:    kubectl --kubeconfig %s get nodes -o wide
Ctrl-C stops every pod and leaves a clean host; podkit up --data-dir %s resumes.
`, time.Since(start).Round(time.Millisecond), c.URL(), len(c.Nodes()), c.Registry(), seeded(c), kc, cfg.DataDir)
			// The demo images may still be building: wait for them before
			// handing the memory start-up used back.
			if err := c.WaitImages(ctx); err != nil && ctx.Err() == nil {
				slog.Error("podkit: demo images", "err", err)
			}
			idle(ctx)
			return run.wait()
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of nodes")
	f.StringVar(&cfg.DataDir, "data-dir", "/var/lib/podkit", "where the cluster keeps its state")
	f.StringVar(&cfg.Address, "address", "127.0.0.1", "the API server's bind address")
	f.IntVar(&cfg.Port, "port", 6443, "the API server's port (-1: a free one)")
	f.StringVar(&cfg.Kubeconfig, "write-kubeconfig", "", "kubeconfig path (default <data-dir>/kubeconfig)")
	f.StringVar(&cfg.NodePrefix, "node-name-prefix", "podkit-node", "nodes are named <prefix>-1, <prefix>-2, ...")
	f.StringVar(&clusterCIDR, "cluster-cidr", "10.244.0.0/16", "pod address range node PodCIDRs come from")
	svc.register(f, false)
	return cmd
}

// waitNodesReady waits until every node of c has posted a Ready status
// in this process (a resumed cluster's nodes still say Ready from their
// last run) and the API server reports n Ready nodes.
func waitNodesReady(ctx context.Context, c *podkit.Cluster, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for i, nd := range c.Nodes() {
		select {
		case <-nd.Posted():
		case <-ctx.Done():
			return fmt.Errorf("podkit: waiting for node %s to be Ready: %w", c.NodeName(i+1), ctx.Err())
		}
	}
	return podkit.WaitNodesReady(ctx, c.Client(), n, 2*time.Minute)
}

// running is a cluster running in the background of podkit up or demo.
type running struct {
	*podkit.Cluster
	cancel context.CancelFunc
	done   chan error
}

// startCluster creates the cluster of cfg, with the demo images and
// podkit-init as its nodes' init and supervisor, runs it in the background
// and waits until its nodes are Ready. The context returned is the run's:
// fail and wait end it.
func startCluster(ctx context.Context, cfg podkit.ClusterConfig) (*running, context.Context, error) {
	cfg.DemoImages = demoImages()
	init := initBinary()
	cfg.Node = func(i int, nc *podkit.NodeConfig) { nc.InitBinary, nc.SupervisorBinary = init, init }
	c, err := podkit.NewCluster(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &running{Cluster: c, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	if err := waitNodesReady(ctx, c, len(c.Nodes())); err != nil {
		return nil, nil, r.fail(err)
	}
	return r, ctx, nil
}

// fail stops the run and shuts the cluster down, returning err (or the
// shutdown's error when err is nil).
func (r *running) fail(err error) error {
	r.cancel()
	<-r.done
	return shutdown(r.Cluster, err)
}

// wait waits for the run to end (Ctrl-C) and shuts the cluster down.
func (r *running) wait() error {
	defer r.cancel()
	return shutdown(r.Cluster, <-r.done)
}

func shutdown(c *podkit.Cluster, err error) error {
	slog.Info("podkit: stopping every pod")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if serr := c.Shutdown(ctx); serr != nil {
		slog.Error("podkit: shutdown", "err", serr)
		if err == nil {
			err = serr
		}
	}
	return err
}

// demoImages lists the demo images: demo-web next to this executable, and
// busybox when the host's is static.
func demoImages() map[string]string {
	imgs := map[string]string{}
	if exe, err := os.Executable(); err == nil {
		imgs["demo/web:1"] = filepath.Join(filepath.Dir(exe), "demo-web")
	}
	if isStatic("/bin/busybox") {
		imgs["library/busybox:1"] = "/bin/busybox"
	}
	return imgs
}

func seeded(c *podkit.Cluster) []string {
	var out []string
	for _, r := range []string{"demo/web:1", "library/busybox:1"} {
		if img := c.Image(r); img != "" {
			out = append(out, img)
		}
	}
	return out
}

// isStatic reports whether path is an ELF executable without a dynamic
// loader (PT_INTERP), so it runs alone in an image.
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}
