package endpointslice_test

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/endpointslice"
)

// Example registers the EndpointSlice and Endpoints controllers in a
// controller manager.
func Example() {
	var client kubernetes.Interface // a client of the API server
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(endpointslice.Name, endpointslice.NewFunc(endpointslice.Config{MaxEndpointsPerSlice: 100}))
	_ = m.Register(endpointslice.EndpointsName, endpointslice.NewEndpointsFunc())
	_ = m.Run(context.Background())
}
