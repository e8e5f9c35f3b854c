package gc_test

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/gc"
	"github.com/podkit/podkit/controller/gc/metaclient"
)

// Example registers the garbage collector in a controller manager.
func Example() {
	ctx := context.Background()
	rc := &rest.Config{Host: "http://127.0.0.1:6443"}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return
	}
	// The real metadata client when the server serves
	// PartialObjectMetadata, else one backed by the dynamic client.
	md, _, err := metaclient.ForConfig(ctx, rc)
	if err != nil {
		return
	}
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(gc.Name, func(c *controller.Context) (controller.Controller, error) {
		return gc.New(c, gc.Config{Metadata: md})
	})
	_ = m.Run(ctx)
}
