package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podkit/podkit"
)

// harnessFlags are the node harness's (split mode's node process).
type harnessFlags struct {
	kubeconfig, nodeName, dataDir, runDir, logDir, init, metricsFile string
	// profile is -profile: the node process writes its profiles there.
	profile string
}

func (h *harnessFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.kubeconfig, "kubeconfig", "", "node harness: the API server's kubeconfig")
	fs.StringVar(&h.nodeName, "node-name", "", "node harness: the node's name")
	fs.StringVar(&h.dataDir, "data-dir", "", "node harness: data dir")
	fs.StringVar(&h.runDir, "run-dir", "", "node harness: runtime dir")
	fs.StringVar(&h.logDir, "log-dir", "", "node harness: container logs")
	fs.StringVar(&h.init, "init", "", "node harness: podkit-init binary")
	fs.StringVar(&h.metricsFile, "metrics-file", "", "node harness: file receiving the /metrics address")
}

// runHarness runs one node as `podkit kubelet --shutdown-pods` does, plus a
// /metrics endpoint on loopback, until SIGTERM.
func runHarness(h harnessFlags, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	mux := http.NewServeMux()
	finishProfile := func() {}
	if h.profile != "" {
		p, err := newProfiler(h.profile)
		if err != nil {
			return err
		}
		p.handle(mux)
		finishProfile = p.finish
	}
	client, err := clientFor(h.kubeconfig)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	defer srv.Close()
	if err := os.WriteFile(h.metricsFile, []byte(lis.Addr().String()), 0o600); err != nil {
		return err
	}
	n, err := podkit.StartNode(ctx, podkit.NodeConfig{Name: h.nodeName, Client: client, DataDir: h.dataDir, RunDir: h.runDir,
		LogDir: h.logDir, InitBinary: h.init, Logger: log, Registerer: reg})
	if err != nil {
		return err
	}
	err = n.Run(ctx)
	finishProfile() // before the pods' teardown
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if serr := n.Shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("node shutdown: %w", serr)
	}
	return err
}
