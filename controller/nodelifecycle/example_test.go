package nodelifecycle_test

import (
	"context"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/nodelifecycle"
	"github.com/podkit/podkit/controller/nodelifecycle/ipam"
	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
)

// Example registers node lifecycle, taint eviction and node IPAM: together
// they assign PodCIDRs, notice lost nodes and move their pods away.
func Example() {
	var client kubernetes.Interface // a client of the API server
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(nodelifecycle.Name, func(c *controller.Context) (controller.Controller, error) {
		return nodelifecycle.New(c, nodelifecycle.WithGracePeriod(40*time.Second))
	})
	_ = m.Register(tainteviction.Name, func(c *controller.Context) (controller.Controller, error) { return tainteviction.New(c) })
	_ = m.Register(ipam.Name, func(c *controller.Context) (controller.Controller, error) {
		return ipam.New(c, ipam.Config{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}, NodeMaskSizeIPv4: 24})
	})
	_ = m.Run(context.Background())
}
