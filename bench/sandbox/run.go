package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// config is one benchmark run's settings.
type config struct {
	// N is the number of measured latency iterations per runtime, after
	// Warmup untimed ones.
	N, Warmup int
	// Pods is the highest number of running pods in the memory phase
	// (also measured at 0 and Pods/10); 0 skips the phase.
	Pods int
	// Settle is the wait before each memory reading.
	Settle time.Duration
	// OCI names the OCI runtimes compared (binary names or paths).
	OCI []string
	// CrunCgroups says how crun is made to run on a hybrid cgroup host:
	// CrunHugetlb (default), CrunHide or CrunAsIs.
	CrunCgroups string
	// TmpfsRoot mounts a tmpfs on the run directory (runtime roots, OCI
	// state and bundles), as /run is on most hosts; without it they live
	// wherever /run is.
	TmpfsRoot bool
	// Testbox is a prebuilt static testbox binary; empty builds one.
	Testbox string
	Logger  *slog.Logger
}

// results is everything a run measured; Markdown formats it.
type results struct {
	Machine string
	// RunDir is where runtime state lived, and on what.
	RunDir     string
	Started    time.Time
	CgroupNote string
	Latency    *latencyResults
	Memory     *memResults
}

// run builds the node, measures latency then memory, and removes the node,
// also when ctx is cancelled. It returns what was measured so far along
// with any error.
func run(ctx context.Context, cfg config) (res *results, err error) {
	if cfg.Logger == nil {
		cfg.Logger = discard()
	}
	if cfg.N <= 0 {
		return nil, fmt.Errorf("need at least one latency iteration, got %d", cfg.N)
	}
	if cfg.Pods < 0 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("negative pods (%d) or warmup (%d)", cfg.Pods, cfg.Warmup)
	}
	res = &results{Machine: machine(), Started: time.Now()}
	n, err := newNode(ctx, &cfg)
	if err != nil {
		return res, fmt.Errorf("node: %w", err)
	}
	res.CgroupNote = n.cgroupNote
	res.RunDir = n.runDir + " on " + fsType(n.runDir)
	defer func() {
		if cerr := n.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	cfg.Logger.Info("node ready", "run dir", n.runDir, "cgroup root", n.tree.Root(), "crun", n.cgroupNote)

	res.Latency, err = runLatency(ctx, n, &cfg)
	if err != nil {
		return res, fmt.Errorf("latency: %w", err)
	}
	if cfg.Pods > 0 {
		res.Memory, err = runMemory(ctx, n, &cfg)
		if err != nil {
			return res, fmt.Errorf("memory: %w", err)
		}
	}
	return res, nil
}
