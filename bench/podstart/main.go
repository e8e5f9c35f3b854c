// Command podstart measures end-to-end pod startup on a real one-node
// podkit cluster (issue 7's benchmark): the time from a pod's creation to
// Running observed through a watch (the Kubernetes pod-startup SLI, image
// cached), for N sequential pods and for a burst of N pods, with
//
//   - the per-pod split observed by the watch (API write, scheduling and
//     binding, the node's share: kubelet, runtime, status write, watch);
//   - the kubelet's per-phase histograms (the seeds' timing table:
//     kubelet_pod_start_step_duration_seconds and friends);
//   - CPU time (user+sys) of the node's processes per pod, next to the wall
//     clock, and the load average, since the machine may be shared;
//   - the memory of the node with the pods running.
//
// Modes: -mode inproc runs everything in this process (podkit.Cluster);
// -mode split (the default) runs the control plane here and the node in a
// process of its own (this program re-executed as a node harness: what
// `podkit kubelet` runs, plus /metrics), so the kubelet's and the runtime
// supervisor's memory and CPU are measured alone; -mode cli runs the real
// `podkit kubelet` binary as the node (no kubelet metrics). Run it as root
// from the module root:
//
//	go run ./bench/podstart -n 100 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/podkit/podkit/sandbox/native"
)

type options struct {
	n       int
	runs    int
	mode    string
	timeout time.Duration
	logFile string
	debug   bool
	profile string
	idle    time.Duration
	// runTmpfs mounts a tmpfs on the node's runtime root when /run is on
	// disk (split and cli modes).
	runTmpfs bool
}

func main() {
	native.Init()
	var o options
	var harness bool
	var hf harnessFlags
	flag.IntVar(&o.n, "n", 100, "pods per phase (sequential, burst)")
	flag.IntVar(&o.runs, "runs", 1, "how many times to repeat the sequential and burst phases")
	flag.StringVar(&o.mode, "mode", "split", "inproc (one process), split (node harness process) or cli (podkit kubelet process)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for pods")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "how long to measure the node's CPU with the last burst running and nothing else happening")
	flag.BoolVar(&o.runTmpfs, "run-tmpfs", true, "split and cli modes: mount a tmpfs on the node's runtime root (/run/podkit/<node>) when /run is on a disk file system, as /run is a tmpfs on a normal host")
	flag.StringVar(&o.logFile, "log", "", "write the cluster's logs to this file")
	flag.BoolVar(&o.debug, "debug", false, "log at debug level (with -log)")
	flag.StringVar(&o.profile, "profile", "", "write the node's CPU, mutex, block and heap profiles to this directory (split mode: the node process's; inproc: this process's)")
	flag.BoolVar(&harness, "node-harness", false, "internal: run as split mode's node process")
	hf.register(flag.CommandLine)
	flag.Parse()
	log := slog.New(slog.DiscardHandler)
	if o.logFile != "" || harness {
		var w io.Writer = os.Stderr
		if o.logFile != "" {
			f, err := os.Create(o.logFile)
			if err != nil {
				fmt.Fprintln(os.Stderr, "podstart:", err)
				os.Exit(1)
			}
			defer f.Close()
			w = f
		}
		level := slog.LevelInfo
		if o.debug {
			level = slog.LevelDebug
		}
		log = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	}
	var err error
	if harness {
		hf.profile = o.profile
		err = runHarness(hf, log)
	} else {
		err = run(o, log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podstart:", err)
		os.Exit(1)
	}
}

// binaries are the programs the benchmark builds.
type binaries struct {
	testbox, init, podkit string
}

func buildAll(dir string, cli bool) (binaries, error) {
	b := binaries{testbox: filepath.Join(dir, "testbox"), init: filepath.Join(dir, "podkit-init")}
	pkgs := [][2]string{{b.testbox, "./internal/testbox"}, {b.init, "./sandbox/cmd/podkit-init"}}
	if cli {
		// podkit kubelet finds podkit-init next to itself.
		b.podkit = filepath.Join(dir, "podkit")
		pkgs = append(pkgs, [2]string{b.podkit, "./cmd/podkit"})
	}
	for _, p := range pkgs {
		cmd := exec.Command("go", "build", "-o", p[0], p[1])
		// Static: the image holds the testbox alone, with no dynamic
		// loader (a cgo build fails to exec in the container with ENOENT).
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("build %s: %v\n%s", p[1], err, out)
		}
	}
	return b, nil
}

func run(o options, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "podstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins, err := buildAll(dir, o.mode == "cli")
	if err != nil {
		return err
	}
	var n *node
	switch o.mode {
	case "inproc":
		var p *profiler
		if o.profile != "" {
			if p, err = newProfiler(o.profile); err != nil {
				return err
			}
			defer p.finish()
		}
		n, err = startInProcess(ctx, dir, bins, log)
		if err == nil && p != nil {
			n.profStart = func(name string) {
				if err := p.start(name); err != nil {
					fmt.Fprintln(os.Stderr, "profile:", err)
				}
			}
			n.profStop = p.stop
		}
	case "split", "cli":
		var args []string
		if o.profile != "" {
			args = append(args, "-profile", o.profile)
		}
		if o.logFile != "" {
			args = append(args, "-log", o.logFile+".node", "-debug="+fmt.Sprint(o.debug))
		}
		n, err = startSplit(ctx, dir, bins, log, o.mode == "cli", o.profile != "", o.runTmpfs, args)
	default:
		return fmt.Errorf("unknown -mode %q", o.mode)
	}
	if err != nil {
		return err
	}
	defer n.close()
	return bench(ctx, o, n)
}

// bench runs the phases and prints the report.
func bench(ctx context.Context, o options, n *node) error {
	// Warm the image cache: the SLI excludes pulls.
	if _, err := startPods(ctx, n.client, n.image, "warm", 1, false, o.timeout); err != nil {
		return err
	}
	r := &report{mode: o.mode, n: o.n, runDir: describeRunDir(n)}
	for i := 0; i < o.runs; i++ {
		for _, burst := range []bool{false, true} {
			name := "seq"
			if burst {
				name = "burst"
			}
			prefix := fmt.Sprintf("%s%d", name, i)
			if n.profStart != nil {
				n.profStart(prefix)
			}
			m := n.measure()
			start := time.Now()
			pods, err := startPods(ctx, n.client, n.image, prefix, o.n, burst, o.timeout)
			if n.profStop != nil {
				n.profStop()
			}
			if err != nil {
				return err
			}
			ph := n.phase(name, i+1, m, pods, time.Since(start))
			if burst {
				// One warm pod and the burst run: the memory the issue asks about.
				ph.kubeletMem, ph.supervisorMem = readProcMem(n.kubeletPID), readProcMem(n.supervisorPID())
			}
			r.phases = append(r.phases, ph)
			// Make room: maxPods (110) counts running pods.
			if !burst || i+1 < o.runs {
				if err := deleteAll(ctx, n.client, prefix, o.n, o.timeout); err != nil {
					return err
				}
				if err := waitNodeIdle(n.runDir, n.cgroupRoot, 1, o.timeout); err != nil {
					return err
				}
			}
		}
	}
	// The steady state with the last burst running: what the node costs
	// when nothing happens (relists, leases, node status).
	m := n.measure()
	time.Sleep(o.idle)
	r.idle = n.phase("idle", o.runs, m, nil, time.Since(m.at))
	r.write(os.Stdout)
	writeEvents(ctx, os.Stdout, n.client)
	return nil
}
