// Command scheduler is a scheduler_perf-style benchmark: it starts podkit's
// API server in process (memory store, real HTTP), creates N nodes and P
// pending pods of one workload, then runs the scheduler and reports the
// pods bound per second and the p99 scheduling attempt latency.
//
//	go run ./bench/scheduler -nodes 100,1000,5000 -pods 10000 -workloads basic,spread,antiaffinity
//
// Workloads: basic (cpu/memory requests), spread (zone topology spread,
// DoNotSchedule, 10 apps), antiaffinity (required anti-affinity on the
// hostname within groups of nodes/2 pods).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/podkit/podkit/internal/procstat"
)

func main() {
	nodes := flag.String("nodes", "100,1000,5000", "comma-separated node counts")
	pods := flag.Int("pods", 10000, "pods per run")
	workloads := flag.String("workloads", "basic,spread,antiaffinity", "comma-separated workloads")
	parallelism := flag.Int("parallelism", 0, "scheduler parallelism (0: GOMAXPROCS)")
	asJSON := flag.Bool("json", false, "print results as JSON lines")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit per run")
	maxBindings := flag.Int("max-bindings", 0, "concurrent binds (0: the scheduler's default)")
	noEvents := flag.Bool("no-events", false, "drop the scheduler's events (measures without the event writes)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of all runs (setup included) to this file")
	windowProfile := flag.String("window-cpuprofile", "", "write a CPU profile of each run's pods/s window (first bind to last) to FILE-<workload>-<nodes>")
	windowAllocs := flag.String("window-allocprofile", "", "write heap profiles at the first bind (FILE-<workload>-<nodes>.base) and the last (FILE-<workload>-<nodes>): pprof -diff_base shows the window's allocations")
	flag.Parse()
	if *cpuProfile != "" && *windowProfile != "" {
		fmt.Fprintln(os.Stderr, "-cpuprofile and -window-cpuprofile exclude each other")
		os.Exit(2)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cpu profile: %v\n", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}

	for _, w := range strings.Split(*workloads, ",") {
		for _, ns := range strings.Split(*nodes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(ns))
			if err != nil {
				fmt.Fprintf(os.Stderr, "bad node count %q: %v\n", ns, err)
				os.Exit(2)
			}
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			cfg := config{Workload: strings.TrimSpace(w), Nodes: n, Pods: *pods, Parallelism: *parallelism, NoEvents: *noEvents, MaxBindings: *maxBindings}
			if *windowProfile != "" {
				cfg.WindowProfile = fmt.Sprintf("%s-%s-%d", *windowProfile, cfg.Workload, n)
			}
			if *windowAllocs != "" {
				cfg.WindowAllocProfile = fmt.Sprintf("%s-%s-%d", *windowAllocs, cfg.Workload, n)
			}
			res, err := run(ctx, cfg)
			cancel()
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s/%d nodes: %v\n", w, n, err)
				pprof.StopCPUProfile()
				os.Exit(1)
			}
			if *asJSON {
				_ = json.NewEncoder(os.Stdout).Encode(res)
				continue
			}
			fmt.Printf("%-13s nodes=%-5d pods=%-6d %8.0f pods/s  p99 attempt %7.2f ms  %6.0f cpu-µs/pod (%4.0f in the bind window)  (bound in %v, attempts %v, Scheduled events %d, load %s)\n",
				res.Workload, res.Nodes, res.Pods, res.PodsPerSecond, res.P99AttemptMillis, res.CPUMicrosPerPod, res.BindCPUMicrosPerPod,
				res.Elapsed.Round(time.Millisecond), res.Attempts, res.ScheduledEvents, loadAverage())
		}
	}
}

// loadAverage returns the 1-minute load average, for the record of a run
// on a shared machine ("?" where /proc/loadavg is unreadable).
func loadAverage() string {
	l, err := procstat.ReadLoadAvg()
	if err != nil {
		return "?"
	}
	return l.One
}
