package job_test

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/job"
)

// Example registers the Job and TTL-after-finished controllers.
func Example() {
	var client kubernetes.Interface // a client of the API server
	m, err := controller.NewManager(controller.ManagerConfig{Client: client})
	if err != nil {
		return
	}
	_ = m.Register(job.Name, func(c *controller.Context) (controller.Controller, error) { return job.New(c) })
	_ = m.Register(job.TTLName, func(c *controller.Context) (controller.Controller, error) { return job.NewTTLController(c, 0) })
	_ = m.Run(context.Background())
}
