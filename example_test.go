package podkit_test

import (
	"context"
	"fmt"

	"github.com/podkit/podkit"
)

// A one-node cluster embedded in a program (its main calls native.Init
// first). c.Client() is an in-process clientset; c.URL() serves kubectl.
func ExampleNewCluster() {
	ctx := context.Background()
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{DataDir: "/var/lib/podkit-example", Port: -1, Nodes: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Shutdown(context.Background())
	go c.Run(ctx)
	fmt.Println(c.URL())
}

func ExampleHostName() {
	fmt.Println(len(podkit.HostName("pk", "worker-1")) <= 15)
	// Output: true
}
