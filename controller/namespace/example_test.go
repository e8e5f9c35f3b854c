package namespace_test

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/namespace"
)

// Example registers the namespace controller in a controller manager.
func Example() {
	var client kubernetes.Interface // a client of the API server
	var md metadata.Interface       // e.g. from metaclient.ForConfig
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(namespace.Name, func(c *controller.Context) (controller.Controller, error) {
		return namespace.New(c, namespace.Config{Metadata: md})
	})
	_ = m.Run(context.Background())
}
