package plugin_test

import (
	"context"
	"fmt"
	"log"

	"github.com/podkit/podkit/cni"
	"github.com/podkit/podkit/cni/plugin"
)

// Running the CNI plugins the node has installed, as the kubelet's
// network plugin path does.
func ExampleNew() {
	n, err := plugin.New(plugin.Config{
		ConfDir:  "/etc/cni/net.d",
		BinDirs:  []string{"/opt/cni/bin", "/usr/lib/cni"},
		CacheDir: "/var/lib/cni",
	}, plugin.WithLoopback())
	if err != nil {
		log.Fatal(err) // wraps plugin.ErrNoNetwork until a CNI installer writes a config
	}
	ctx := context.Background()
	a := &cni.Attachment{ContainerID: "9f86d081", NetNS: "/run/podkit/netns/9f86d081"}
	a.Pod.Namespace, a.Pod.Name = "default", "web-0"
	res, err := n.Setup(ctx, a)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n.NetworkName(), res.PodIPs())
	if err := n.Teardown(ctx, a); err != nil {
		log.Fatal(err)
	}
}
