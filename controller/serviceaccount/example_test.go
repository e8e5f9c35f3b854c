package serviceaccount_test

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/serviceaccount"
)

// Example registers the ServiceAccount controller in a controller manager.
func Example() {
	var client kubernetes.Interface // a client of the API server
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(serviceaccount.Name, func(c *controller.Context) (controller.Controller, error) {
		return serviceaccount.New(c, serviceaccount.Config{})
	})
	_ = m.Run(context.Background())
}
