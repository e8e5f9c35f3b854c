package proxy_test

import (
	"context"
	"log"
	"net/netip"
	"os/signal"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/proxy"
)

// Example runs the proxy of node "node-a" until SIGTERM, then removes its
// rules.
func Example() {
	cfg, err := clientcmd.BuildConfigFromFlags("", "/etc/podkit/kubeconfig")
	if err != nil {
		log.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	p, err := proxy.New(proxy.Config{
		Client:      client,
		NodeName:    "node-a",
		ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// A previous run that crashed may have left its table: the first sync
	// adopts it, or remove it explicitly.
	if err := proxy.Cleanup("", proxy.DefaultTable); err != nil {
		log.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
