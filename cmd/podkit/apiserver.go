package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/podkit/podkit"
	"github.com/podkit/podkit/apiserver/app"
)

func newAPIServerCommand() *cobra.Command {
	opts := app.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the Kubernetes-compatible API server",
		Long: `Run the podkit API server: Kubernetes REST and watch over bbolt (in --data-dir), memory or etcd
storage (--store etcd://host:port,...: several API servers then serve one cluster), with the admission chain, discovery, OpenAPI and kubectl tables. It serves HTTPS with
a cluster PKI it creates on first start in <data-dir>/pki (CA, serving, admin and kubelet client
certificates, service-account key; reused on restart) and authenticates every request (client
certificates, tokens, service accounts; anonymous off). --write-kubeconfig writes an admin
kubeconfig kubectl can use; --insecure-serving turns all of this off for tests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Logger = slog.Default()
			opts.Configure = podkit.BirthTrace // the pod birth trace, as podkit up
			srv, err := app.New(cmd.Context(), opts)
			if err != nil {
				return err
			}
			slog.Info("podkit apiserver serving", "url", srv.URL, "store", opts.Store, "dataDir", opts.DataDir, "kubeconfig", opts.KubeconfigPath)
			return srv.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.DataDir, "data-dir", opts.DataDir, "directory holding the cluster state (bbolt database)")
	f.StringVar(&opts.Store, "store", opts.Store, "storage backend: bolt, memory, or etcd://host:port[,host:port] (several API servers may share one etcd)")
	f.StringVar(&opts.BindAddress, "bind-address", opts.BindAddress, "address to listen on")
	f.IntVar(&opts.Port, "port", opts.Port, "port to listen on (0 picks a free one)")
	f.StringVar(&opts.KubeconfigPath, "write-kubeconfig", opts.KubeconfigPath, "write a kubeconfig for this server to this file")
	f.StringVar(&opts.ServiceClusterIPRange, "service-cluster-ip-range", opts.ServiceClusterIPRange, "CIDR Services' cluster IPs are allocated from; its first address is the kubernetes service's")
	f.Var(&opts.ServiceNodePortRange, "service-node-port-range", "range of node ports of NodePort and LoadBalancer Services")
	f.StringVar(&opts.AdvertiseAddress, "advertise-address", "", "address the kubernetes service's endpoints point at (default: --bind-address when it is a specific address, else 127.0.0.1)")
	app.AddSecureFlags(f, &opts.Secure)
	app.AddAuthorizationFlags(f, &opts.Authorization)
	app.AddStorageFlags(f, &opts.Storage)
	app.AddAuditFlags(f, &opts.Audit)
	return cmd
}
