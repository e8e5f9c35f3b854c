package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
)

// node is the cluster the benchmark drives: an API client, the testbox
// image, and the processes that make up the node.
type node struct {
	client kubernetes.Interface
	image  string
	// kubeletPID is the process hosting the kubelet (this one in process
	// mode); supervisorPID the runtime's supervisor.
	kubeletPID    int
	supervisorPID func() int
	// runDir and cgroupRoot are the node's runtime root and cgroup tree.
	runDir, cgroupRoot string
	// runTmpfs is set when the benchmark mounted a tmpfs on runDir.
	runTmpfs bool
	// gather reads the kubelet's metrics (nil: none).
	gather gatherer
	// profStart and profStop bracket a phase's CPU profile (nil: none).
	profStart func(name string)
	profStop  func()
	close     func()
}

// startInProcess runs a one-node podkit.Cluster in this process.
func startInProcess(ctx context.Context, dir string, bins binaries, log *slog.Logger) (*node, error) {
	ctx, cancel := context.WithCancel(ctx)
	reg := prometheus.NewRegistry()
	prefix := fmt.Sprintf("bench-%d", os.Getpid()%100000)
	c, err := podkit.NewCluster(ctx, podkit.ClusterConfig{
		DataDir: filepath.Join(dir, "cluster"), Port: -1, NodePrefix: prefix, Store: "memory",
		DemoImages: map[string]string{"bench/testbox:1": bins.testbox},
		Node: func(i int, nc *podkit.NodeConfig) {
			nc.InitBinary = bins.init
			nc.Registerer = reg
		},
		Logger:        log,
		ShutdownGrace: time.Second,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	n := &node{
		client: c.Client(), image: c.Image("bench/testbox:1"), kubeletPID: os.Getpid(),
		supervisorPID: func() int { return pidFile(filepath.Join("/run/podkit", c.NodeName(1), "supervisor.pid")) },
		runDir:        filepath.Join("/run/podkit", c.NodeName(1)), cgroupRoot: podkit.HostName("podkit-", c.NodeName(1)),
		gather: reg.Gather,
	}
	n.close = func() {
		cancel()
		<-done
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer scancel()
		if err := c.Shutdown(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "shutdown:", err)
		}
		os.RemoveAll(filepath.Join("/run/podkit", c.NodeName(1)))
	}
	if err := podkit.WaitNodesReady(ctx, c.Client(), 1, time.Minute); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}
