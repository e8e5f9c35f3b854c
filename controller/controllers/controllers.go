// Package controllers assembles podkit's default controller manager: every
// built-in controller registered on one controller.Manager, sharing one
// informer factory, as kube-controller-manager runs them. `podkit
// controller-manager` and podkit.Cluster use it; an embedder who wants a
// different set registers controllers on a controller.Manager directly.
package controllers

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/deployment"
	"github.com/podkit/podkit/controller/endpointslice"
	"github.com/podkit/podkit/controller/gc"
	"github.com/podkit/podkit/controller/gc/metaclient"
	"github.com/podkit/podkit/controller/job"
	"github.com/podkit/podkit/controller/namespace"
	"github.com/podkit/podkit/controller/nodelifecycle"
	"github.com/podkit/podkit/controller/nodelifecycle/ipam"
	"github.com/podkit/podkit/controller/nodelifecycle/tainteviction"
	"github.com/podkit/podkit/controller/replicaset"
	"github.com/podkit/podkit/controller/serviceaccount"
)

// Options tune the default controllers.
type Options struct {
	// ClusterCIDR is the pod address range node IPAM allocates from
	// (default 10.244.0.0/16); NodeMaskSize sizes each node's (default 24).
	ClusterCIDR  netip.Prefix
	NodeMaskSize int
	// NodeMonitorGracePeriod is how long a node's Lease may go unrenewed
	// before the node is marked Unknown (default 40 s).
	NodeMonitorGracePeriod time.Duration
	// JobBackoff is the base delay between recreations of failed Job pods
	// (default 10 s).
	JobBackoff time.Duration
	// Disable names controllers not to run.
	Disable []string
}

// Names lists the controllers New registers, in order.
var Names = []string{
	replicaset.Name, deployment.Name, gc.Name, "namespace", "serviceaccount",
	"nodeipam", "nodelifecycle", "taint-eviction", job.Name, job.TTLName,
	endpointslice.Name, endpointslice.EndpointsName,
}

// New returns a Manager with every default controller registered. rc is
// the client configuration (the garbage collector and the namespace
// controller also need a metadata client made from it).
func New(ctx context.Context, rc *rest.Config, cfg controller.ManagerConfig, o Options) (*controller.Manager, error) {
	if cfg.Client == nil {
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("controllers: client: %w", err)
		}
		cfg.Client = c
	}
	md, _, err := metaclient.ForConfig(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("controllers: metadata client: %w", err)
	}
	m, err := controller.NewManager(cfg)
	if err != nil {
		return nil, err
	}
	var ipamCfg ipam.Config
	if o.ClusterCIDR.IsValid() {
		ipamCfg.ClusterCIDRs = []netip.Prefix{o.ClusterCIDR}
	}
	ipamCfg.NodeMaskSizeIPv4 = o.NodeMaskSize
	var nlOpts []nodelifecycle.Option
	if o.NodeMonitorGracePeriod > 0 {
		nlOpts = append(nlOpts, nodelifecycle.WithGracePeriod(o.NodeMonitorGracePeriod))
	}
	var jobOpts []job.Option
	if o.JobBackoff > 0 {
		jobOpts = append(jobOpts, job.WithBackoff(o.JobBackoff, 6*time.Minute))
	}
	all := map[string]controller.NewFunc{
		replicaset.Name: replicaset.NewFunc(),
		deployment.Name: deployment.NewFunc(),
		gc.Name: func(c *controller.Context) (controller.Controller, error) {
			return gc.New(c, gc.Config{Metadata: md})
		},
		"namespace": func(c *controller.Context) (controller.Controller, error) {
			return namespace.New(c, namespace.Config{Metadata: md})
		},
		"serviceaccount": func(c *controller.Context) (controller.Controller, error) {
			return serviceaccount.New(c, serviceaccount.Config{})
		},
		"nodeipam": func(c *controller.Context) (controller.Controller, error) { return ipam.New(c, ipamCfg) },
		"nodelifecycle": func(c *controller.Context) (controller.Controller, error) {
			return nodelifecycle.New(c, nlOpts...)
		},
		"taint-eviction": func(c *controller.Context) (controller.Controller, error) { return tainteviction.New(c) },
		job.Name:         func(c *controller.Context) (controller.Controller, error) { return job.New(c, jobOpts...) },
		job.TTLName: func(c *controller.Context) (controller.Controller, error) {
			return job.NewTTLController(c, 0)
		},
		endpointslice.Name:          endpointslice.NewFunc(endpointslice.Config{}),
		endpointslice.EndpointsName: endpointslice.NewEndpointsFunc(),
	}
	disabled := map[string]bool{}
	for _, d := range o.Disable {
		if _, ok := all[d]; !ok {
			return nil, fmt.Errorf("controllers: unknown controller %q to disable (known: %v)", d, Names)
		}
		disabled[d] = true
	}
	for _, name := range Names {
		if disabled[name] {
			continue
		}
		if err := m.Register(name, all[name]); err != nil {
			return nil, err
		}
	}
	return m, nil
}
