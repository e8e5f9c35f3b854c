// Command up measures the reference composition as a user meets it:
// `podkit up` run as a process, the time from the process's start to the
// cluster being Ready (every node Ready and the API serving: the banner
// printed and the API answering on its port), on a fresh data dir and on
// a resumed one; and the memory of the idle one-node cluster (RSS and PSS
// of every podkit process summed: `podkit up` and the runtime supervisor
// when it runs). It reports CPU time (user+sys) next to the wall clock and
// the load average, since the machine may be shared. Run it as root from
// the module root after `make build`:
//
//	go run ./bench/up -podkit bin/podkit -runs 5
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
	"sort"
	"strings"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("podkit", "bin/podkit", "the podkit binary (demo-web and podkit-init next to it)")
	runs := flag.Int("runs", 5, "runs per phase (fresh, resumed)")
	idle := flag.Duration("idle", 5*time.Second, "how long the cluster idles before its memory is read")
	flag.Parse()
	if err := run(*bin, *runs, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "bench/up:", err)
		os.Exit(1)
	}
}

type sample struct {
	wall, cpu time.Duration
	mem       procMem
	procs     int
}

func run(bin string, runs int, idle time.Duration) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	fmt.Printf("bench/up: %s, %d runs per phase, load average %s at start\n", bin, runs, loadAvg())
	var fresh, resumed []sample
	for i := 0; i < runs; i++ {
		dir, err := os.MkdirTemp("", "bench-up-")
		if err != nil {
			return err
		}
		for phase := 0; phase < 2; phase++ {
			s, err := once(bin, dir, idle)
			if err != nil {
				os.RemoveAll(dir)
				return err
			}
			if phase == 0 {
				fresh = append(fresh, s)
			} else {
				resumed = append(resumed, s)
			}
			fmt.Printf("run %d %-7s ready in %6.1f ms wall, %6.1f ms cpu; idle %s in %d process(es); load %s\n", i+1,
				map[int]string{0: "fresh", 1: "resumed"}[phase], ms(s.wall), ms(s.cpu), s.mem, s.procs, loadAvg())
		}
		os.RemoveAll(dir)
	}
	report("fresh data dir", fresh)
	report("resumed data dir", resumed)
	fmt.Printf("load average at end %s\n", loadAvg())
	return nil
}

var banner = regexp.MustCompile(`podkit is up in .*: API server (\S+),`)

// once runs podkit up on dir until it is Ready, measures it, lets it idle,
// reads its memory and stops it with SIGTERM.
func once(bin, dir string, idle time.Duration) (sample, error) {
	var s sample
	cmd := exec.Command(bin, "up", "--data-dir", dir, "--port", "-1", "--node-name-prefix", "bench-up-"+randomHex(3),
		"--cluster-cidr", "10.251.0.0/16")
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
	defer stop(cmd)
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
	pids := podkitProcesses(bin)
	for _, pid := range pids {
		s.cpu += cpuTime(pid)
	}
	time.Sleep(idle)
	for _, pid := range podkitProcesses(bin) {
		s.mem = s.mem.add(readProcMem(pid))
		s.procs++
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

func stop(cmd *exec.Cmd) {
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
	for len(podkitProcesses(cmd.Path)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// podkitProcesses are the processes running bin (podkit up and its
// re-executions: the runtime supervisor).
func podkitProcesses(bin string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.TrimSuffix(exe, " (deleted)") == bin {
			pids = append(pids, pid)
		}
	}
	return pids
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
	for _, s := range ss {
		if s.procs > 0 {
			fmt.Printf("%s: idle one-node cluster %s in %d process(es)\n", name, s.mem, s.procs)
			break
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	c := append([]time.Duration(nil), ds...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}

func minOf(ds []time.Duration) time.Duration { return sortedAt(ds, 0) }
func maxOf(ds []time.Duration) time.Duration { return sortedAt(ds, len(ds)-1) }

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
