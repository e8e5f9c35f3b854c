// Command sandbox benchmarks podkit's native container runtime
// (sandbox/native) against bare `crun run` and `runc run` of the same root
// filesystem, for issue 6's two targets: the whole native sandbox +
// container start within 2× of `crun run`, and at most 2 MiB of the
// supervisor's RSS per running pod. It needs root.
//
//	go run ./bench/sandbox -n 200 -pods 100 -out /tmp/sandbox-bench.md
//
// # What it measures
//
// Latency (-n iterations, interleaved native, crun, runc so that load
// changes on a shared machine hit all three alike): for native, the
// kubelet's path for one pod of one container — RunPodSandbox (pinned
// net/IPC/UTS namespaces, a real cni.Bridge wiring a veth, DNS files),
// CreateContainer (overlay rootfs mount, container cgroup, OCI spec,
// the container init created by the supervisor) and StartContainer —
// timed per phase, "until started" when StartContainer returns and "until
// exited" when the runtime's event stream reports the exit of the
// container's `testbox exit 0`; then StopPodSandbox + RemovePodSandbox
// (teardown). For crun and runc: `<runtime> run --bundle B id` of a bundle
// whose config.json comes from sandbox/ocispec.Generate (host network and
// IPC, new PID, mount and UTS namespaces, a cgroup of its own, the same
// resolv.conf/hosts/hostname bind mounts) over the same kind of overlay
// rootfs, timed from fork to the command's exit, which includes the
// container's exit and deletion. The pod cgroup the kubelet creates before
// RunPodSandbox is timed separately.
//
// Alongside each iteration the program also times, on their own, pieces of
// CreateContainer it can reach (overlay mount, container cgroup, spec
// generation, one durable record write, a fork + exec of this binary and
// of testbox), to attribute the native path's time.
//
// Memory: the supervisor's RSS and PSS (/proc/<pid>/smaps_rollup) with 0,
// -pods/10 and -pods running pods, each one `testbox sleep inf` container,
// and the per-pod difference; the pause process of a shareProcessNamespace
// pod; and a check that each container's process is the testbox binary
// itself (no init left behind after exec), a child of the supervisor and
// alone in its cgroup.
//
// # Isolation and cleanup
//
// The program builds a throwaway node: a network namespace standing in
// for the host (the bridge and host veths live there), a unique bridge
// name and /24, a cgroup root /podkit-bench-<rand>, runtime roots under
// /run/podkit-bench-<rand> and a temporary directory for the root
// filesystem and overlay upper dirs. Everything is removed at the end,
// also after an error or Ctrl-C.
//
// crun 1.8 refuses to run on a hybrid cgroup host whose cgroup2 hierarchy
// has controllers (here: hugetlb, which has no v1 hierarchy). With
// -crun-cgroups hugetlb (the default) the program mounts a cgroup v1
// hugetlb hierarchy for the run, which takes the controller off cgroup2,
// and unmounts it at the end; with -crun-cgroups hide it runs crun from a
// thread whose private mount namespace covers the cgroup2 hierarchy with
// an empty tmpfs, changing nothing on the host (what the smoke test uses:
// other packages' tests toggle the same hugetlb mount).
//
// The runtime state lives wherever /run is; -tmpfs puts it on a tmpfs, as
// /run is on most hosts, to separate the cost of the runtime's fsyncs.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/podkit/podkit/sandbox/native"
)

func main() {
	native.Init()
	exitIfProbe()

	var cfg config
	flag.IntVar(&cfg.N, "n", 200, "latency iterations per runtime")
	flag.IntVar(&cfg.Warmup, "warmup", 5, "untimed iterations per runtime before measuring")
	flag.IntVar(&cfg.Pods, "pods", 100, "running pods for the memory measurement (also measured at 0 and pods/10)")
	flag.DurationVar(&cfg.Settle, "settle", 3*time.Second, "wait before reading memory, so the supervisor's GC settles")
	oci := flag.String("oci", "crun,runc", "comma-separated OCI runtimes to compare (names or paths; empty: none)")
	out := flag.String("out", "", "also write the results as markdown to this file")
	testbox := flag.String("testbox", "", "a prebuilt static testbox binary (default: go build ./internal/testbox)")
	flag.StringVar(&cfg.CrunCgroups, "crun-cgroups", CrunHugetlb, "how crun is made to run on a hybrid cgroup host whose cgroup2 has controllers: "+
		CrunHugetlb+" (mount a v1 hugetlb hierarchy for the run), "+CrunHide+" (hide cgroup2 from crun in a private mount namespace; changes nothing on the host) or "+CrunAsIs)
	flag.BoolVar(&cfg.TmpfsRoot, "tmpfs", false, "keep runtime state on a tmpfs (as /run is on most hosts) rather than wherever /run is")
	verbose := flag.Bool("v", false, "log progress")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.Testbox = *testbox
	for _, name := range strings.Split(*oci, ",") {
		if name = strings.TrimSpace(name); name != "" {
			cfg.OCI = append(cfg.OCI, name)
		}
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "bench/sandbox needs root")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	res, err := run(ctx, cfg)
	stop()
	if res != nil {
		md := res.Markdown()
		fmt.Print(md)
		if *out != "" {
			if werr := os.WriteFile(*out, []byte(md), 0o644); werr != nil {
				fmt.Fprintf(os.Stderr, "write %s: %v\n", *out, werr)
				os.Exit(1)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench/sandbox: %v\n", err)
		os.Exit(1)
	}
}
