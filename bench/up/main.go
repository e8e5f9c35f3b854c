// Command up measures the reference composition as a user meets it:
// `podkit up` run as a process, the time from the process's start to the
// cluster being Ready (every node Ready and the API serving: the banner
// printed and the API answering on its port), on a fresh data dir and on
// a resumed one; and the memory of the idle one-node cluster (RSS and PSS
// of every podkit process summed: `podkit up` and its node's runtime
// supervisor, a re-exec of podkit-init or of podkit). It reports CPU time
// (user+sys) next to the wall clock and the load average, since the
// machine may be shared, and ends with a verdict per target (Ready ≤ 1 s,
// idle RSS ≤ 100 MiB). -trace runs podkit up with -v and prints, per run,
// when the start-up's milestones were logged. Run it as root from the
// module root after `make build`:
//
//	go run ./bench/up -podkit bin/podkit -runs 5
//	go run ./bench/up -runs 1 -idle 5s -trace
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/podkit/podkit/internal/procstat"
)

// The targets of issue 8.
const (
	readyTarget = time.Second
	rssTarget   = 100 << 20
)

func main() {
	bin := flag.String("podkit", "bin/podkit", "the podkit binary (demo-web and podkit-init next to it)")
	runs := flag.Int("runs", 5, "runs per phase (fresh, resumed)")
	idle := flag.Duration("idle", 30*time.Second, "how long the cluster idles before its memory is read (podkit up pages out start-up's code at Ready; what the idle cluster runs faults back in within ~30 s)")
	trace := flag.Bool("trace", false, "run podkit up -v and print when each start-up milestone was logged")
	flag.Parse()
	if err := run(*bin, *runs, *idle, *trace); err != nil {
		fmt.Fprintln(os.Stderr, "bench/up:", err)
		os.Exit(1)
	}
}

type sample struct {
	wall, cpu time.Duration
	mem       procMem
	procs     []string // "podkit up" or "supervisor (podkit-init)"
	trace     []milestone
}

func run(bin string, runs int, idle time.Duration, trace bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	fmt.Printf("bench/up: %s, %d runs per phase, %d CPUs, load average %s at start\n", bin, runs, runtime.NumCPU(), loadAvg())
	var fresh, resumed []sample
	for i := 0; i < runs; i++ {
		dir, err := os.MkdirTemp("", "bench-up-")
		if err != nil {
			return err
		}
		prefix := "bench-up-" + randomHex(3)
		for phase, name := range []string{"fresh", "resumed"} {
			s, err := once(bin, dir, prefix, idle, trace)
			if err != nil {
				os.RemoveAll(dir)
				return err
			}
			if phase == 0 {
				fresh = append(fresh, s)
			} else {
				resumed = append(resumed, s)
			}
			fmt.Printf("run %d %-7s ready in %6.1f ms wall, %6.1f ms cpu; idle %s in %s; load %s\n", i+1,
				name, ms(s.wall), ms(s.cpu), s.mem, strings.Join(s.procs, " + "), loadAvg())
			printTrace(s.trace)
		}
		os.RemoveAll(dir)
	}
	report("fresh data dir", fresh)
	report("resumed data dir", resumed)
	fmt.Printf("load average at end %s\n", loadAvg())
	verdicts(fresh, resumed)
	return nil
}

var banner = regexp.MustCompile(`podkit is up in .*: API server (\S+),`)

// once runs podkit up on dir until it is Ready, measures it, lets it idle,
// reads its memory and stops it with SIGTERM.
func once(bin, dir, prefix string, idle time.Duration, trace bool) (sample, error) {
	var s sample
	args := []string{"up", "--data-dir", dir, "--port", "-1", "--node-name-prefix", prefix, "--cluster-cidr", "10.251.0.0/16"}
	if trace {
		args = append(args, "-v")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return s, err
	}
	logf, err := os.Create(filepath.Join(dir, "up.log"))
	if err != nil {
		return s, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return s, err
	}
	defer stop(cmd, prefix)
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := banner.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-url:
		if err := serving(u); err != nil {
			return s, err
		}
	case <-time.After(2 * time.Minute):
		return s, fmt.Errorf("podkit up not Ready within 2 minutes (log: %s)", logf.Name())
	}
	s.wall = time.Since(start)
	for _, p := range clusterProcesses(cmd.Process.Pid, prefix) {
		s.cpu += procstat.CPU(p.pid)
	}
	if trace {
		s.trace = milestones(logf.Name(), start, s.wall)
	}
	time.Sleep(idle)
	for _, p := range clusterProcesses(cmd.Process.Pid, prefix) {
		m, _ := procstat.ReadMemory(p.pid)
		s.mem = procMem{s.mem.Add(m)}
		s.procs = append(s.procs, p.what)
	}
	return s, nil
}

// insecure only checks that the API server answers: it serves TLS with a
// certificate of the cluster's own CA.
var insecure = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a liveness check

// serving waits for the API server to answer (any HTTP status).
func serving(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/version", nil)
		resp, err := insecure.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("API server %s not serving: %w", url, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stop(cmd *exec.Cmd, prefix string) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
	}
	// The supervisor exits a second after its last container and kubelet.
	deadline := time.Now().Add(10 * time.Second)
	for len(clusterProcesses(0, prefix)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

func report(name string, ss []sample) {
	if len(ss) == 0 {
		return
	}
	walls := make([]time.Duration, len(ss))
	cpus := make([]time.Duration, len(ss))
	for i, s := range ss {
		walls[i], cpus[i] = s.wall, s.cpu
	}
	fmt.Printf("%s: ready wall min %.1f / median %.1f / max %.1f ms; cpu median %.1f ms\n", name,
		ms(minOf(walls)), ms(median(walls)), ms(maxOf(walls)), ms(median(cpus)))
	fmt.Printf("%s: idle one-node cluster median %s\n", name, medianMem(ss))
}

// verdicts prints one line per target: met when the median run meets it.
func verdicts(fresh, resumed []sample) {
	verdict := func(ok bool) string {
		if ok {
			return "MET"
		}
		return "NOT MET"
	}
	for _, ph := range []struct {
		name string
		ss   []sample
	}{{"fresh", fresh}, {"resumed", resumed}} {
		if len(ph.ss) == 0 {
			continue
		}
		walls, cpus := make([]time.Duration, len(ph.ss)), make([]time.Duration, len(ph.ss))
		for i, s := range ph.ss {
			walls[i], cpus[i] = s.wall, s.cpu
		}
		w := median(walls)
		fmt.Printf("verdict: time to Ready (%s data dir) <= %v: %s (median %.0f ms wall, %.0f ms cpu)\n",
			ph.name, readyTarget, verdict(w <= readyTarget), ms(w), ms(median(cpus)))
	}
	all := append(append([]sample(nil), fresh...), resumed...)
	if len(all) > 0 {
		m := medianMem(all)
		fmt.Printf("verdict: idle one-node cluster RSS <= %d MiB: %s (median %s)\n", rssTarget>>20, verdict(m.RSS <= rssTarget), m)
	}
}

func medianMem(ss []sample) procMem {
	ms := make([]procMem, len(ss))
	for i, s := range ss {
		ms[i] = s.mem
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].RSS < ms[j].RSS })
	return ms[len(ms)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration { return sortedAt(ds, len(ds)/2) }
func minOf(ds []time.Duration) time.Duration  { return sortedAt(ds, 0) }
func maxOf(ds []time.Duration) time.Duration  { return sortedAt(ds, len(ds)-1) }

func sortedAt(ds []time.Duration, i int) time.Duration {
	c := append([]time.Duration(nil), ds...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[i]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
