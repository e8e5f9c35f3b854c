package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/internal/kubeclient"
)

func newKubeletCommand() *cobra.Command {
	var kubeconfig, name, podCIDR, dataDir, runDir, logDir, addr, clusterDNS, domain string
	var shutdown bool
	var svc serviceFlags
	var tlsFlags kubeletTLSFlags
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Run a node: the kubelet with podkit's native runtime, bridge network, cgroups and images",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			if name == "" {
				if name, err = os.Hostname(); err != nil {
					return err
				}
			}
			sec, err := tlsFlags.setup(rc, name, addr)
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(kubeclient.Protobuf(sec.rc))
			if err != nil {
				return err
			}
			init := initBinary()
			cfg := podkit.NodeConfig{Name: name, Client: client, DataDir: dataDir, RunDir: runDir, LogDir: logDir,
				KubeletAddr: addr, ClusterDomain: domain, InitBinary: init, SupervisorBinary: init, Logger: slog.Default(),
				ServingCert: sec.serving, ClientCA: sec.clientCA}
			if podCIDR != "" {
				if cfg.PodCIDR, err = netip.ParsePrefix(podCIDR); err != nil {
					return fmt.Errorf("--pod-cidr: %w", err)
				}
			}
			if clusterDNS != "" {
				a, err := netip.ParseAddr(clusterDNS)
				if err != nil {
					return fmt.Errorf("--cluster-dns: %w", err)
				}
				cfg.ClusterDNS = []netip.Addr{a}
			}
			if cfg.Services, err = svc.config(); err != nil {
				return err
			}
			n, err := podkit.StartNode(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			err = n.Run(cmd.Context())
			if shutdown {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), time.Minute)
				defer cancel()
				if serr := n.Shutdown(ctx); serr != nil && err == nil {
					err = serr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&name, "node-name", "", "the node's name (default: the host name)")
	f.StringVar(&podCIDR, "pod-cidr", "", "the node's pod range (default: assigned by the control plane)")
	f.StringVar(&dataDir, "data-dir", "", "state: images, snapshots, pods (default /var/lib/podkit/nodes/<node>)")
	f.StringVar(&runDir, "run-dir", "", "runtime state: namespaces, bundles, supervisor socket (default /run/podkit/<node>)")
	f.StringVar(&logDir, "log-dir", "", "container logs (default /var/log/pods)")
	f.StringVar(&addr, "address", "127.0.0.1:10250", "the kubelet server's listen address (logs)")
	f.StringVar(&clusterDNS, "cluster-dns", "10.96.0.10", "the cluster DNS address pods resolve through")
	f.StringVar(&domain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	svc.register(f, true)
	tlsFlags.register(f)
	f.BoolVar(&shutdown, "shutdown-pods", false, "on exit, stop every pod and remove the node's bridge and cgroups (default: pods keep running and a restarted kubelet adopts them)")
	return cmd
}

// initBinary is podkit-init next to this executable, when it is there.
func initBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), "podkit-init")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	return ""
}
