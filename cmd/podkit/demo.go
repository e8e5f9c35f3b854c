package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/examples/manifests"
)

func newDemoCommand() *cobra.Command {
	var cfg podkit.ClusterConfig
	var dir, tracePod, clusterCIDR string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a cluster, apply the example manifests, show the pods and the birth of one, keep serving",
		Long: `Start a cluster as podkit up does, apply the example manifests (examples/manifests: a web server
pod with an init container and probes, and a Deployment of three replicas; --manifests DIR for
others), wait until their pods are Ready, print them like kubectl get pods -o wide and the birth
timeline of one pod (--trace-pod), then keep serving until Ctrl-C so you can try kubectl. Images
named like the demo images (demo/web:1) come from the embedded registry.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			start := time.Now()
			out := cmd.OutOrStdout()
			cfg.Logger = slog.Default()
			p, err := netip.ParsePrefix(clusterCIDR)
			if err != nil {
				return fmt.Errorf("--cluster-cidr: %w", err)
			}
			cfg.ClusterCIDR = p
			if cfg.Kubeconfig == "" {
				cfg.Kubeconfig = filepath.Join(cfg.DataDir, "kubeconfig")
			}
			objs, err := readManifests(dir)
			if err != nil {
				return err
			}
			run, ctx, err := startCluster(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			c, fail := run.Cluster, run.fail
			kc, _ := filepath.Abs(cfg.Kubeconfig)
			fmt.Fprintf(out, "podkit is up in %s: API server %s, %d node(s), registry %s\n",
				time.Since(start).Round(time.Millisecond), c.URL(), len(c.Nodes()), c.Registry())
			applied, err := apply(ctx, c, objs)
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(out, "applied %s\n", strings.Join(applied, ", "))
			wctx, wcancel := context.WithTimeout(ctx, timeout)
			pods, err := waitPodsReady(wctx, c.Client(), objs)
			wcancel()
			if err != nil {
				return fail(err)
			}
			fmt.Fprintln(out)
			printPods(out, pods, time.Now())
			if tracePod != "" {
				pod, err := getTracedPod(ctx, c.Client(), metav1.NamespaceDefault, tracePod, 30*time.Second)
				if err != nil {
					return fail(fmt.Errorf("reading pod %s: %w", tracePod, err))
				}
				fmt.Fprintln(out)
				if err := printTrace(out, pod, ""); err != nil {
					return fail(err)
				}
			}
			fmt.Fprintf(out, `
try:    export KUBECONFIG=%s
        kubectl get pods -o wide
        podkit trace %s
Ctrl-C stops every pod and leaves a clean host.
`, kc, tracePod)
			idle(ctx)
			return run.wait()
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Nodes, "nodes", 1, "number of nodes")
	f.StringVar(&cfg.DataDir, "data-dir", "/var/lib/podkit", "where the cluster keeps its state")
	f.IntVar(&cfg.Port, "port", 6443, "the API server's port (-1: a free one)")
	f.StringVar(&cfg.Kubeconfig, "write-kubeconfig", "", "kubeconfig path (default <data-dir>/kubeconfig)")
	f.StringVar(&cfg.NodePrefix, "node-name-prefix", "podkit-node", "nodes are named <prefix>-1, <prefix>-2, ...")
	f.StringVar(&clusterCIDR, "cluster-cidr", "10.244.0.0/16", "pod address range node PodCIDRs come from")
	f.StringVar(&dir, "manifests", "", "directory of manifests to apply (default: the built-in examples/manifests)")
	f.StringVar(&tracePod, "trace-pod", "web", "pod (in namespace default) whose birth timeline to print; empty for none")
	f.DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the pods to be Ready")
	return cmd
}

// readManifests decodes every YAML document of dir's *.yaml files (the
// built-in examples when dir is empty), in file name order.
func readManifests(dir string) ([]runtime.Object, error) {
	fsys := fs.FS(manifests.FS)
	if dir != "" {
		fsys = os.DirFS(dir)
	}
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var objs []runtime.Object
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		r := utilyaml.NewYAMLReader(bufioReader(b))
		for {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			objs = append(objs, obj)
		}
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("no manifests in %q", dir)
	}
	return objs, nil
}
