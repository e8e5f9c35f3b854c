package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/podkit/podkit/internal/procstat"
)

// mark is the state of the node's processes at the start of a phase.
type mark struct {
	at                    time.Time
	self, kubelet, superv time.Duration
	containers            time.Duration
	superPID              int
	metrics               snapshot
	loadBefore            string
}

func (n *node) snapshot() snapshot {
	if n.gather == nil {
		return nil
	}
	fams, err := n.gather()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reading kubelet metrics:", err)
		return nil
	}
	return histograms(fams)
}

// measure marks the start of a phase.
func (n *node) measure() mark {
	sp := n.supervisorPID()
	return mark{at: time.Now(), self: procstat.CPU(os.Getpid()), kubelet: procstat.CPU(n.kubeletPID), superv: procstat.CPU(sp),
		containers: childrenCPU(sp), superPID: sp, metrics: n.snapshot(), loadBefore: loadAvg()}
}

// phaseResult is one sequential or burst phase.
type phaseResult struct {
	name string
	run  int
	pods []podTimes
	wall time.Duration
	// CPU time spent during the phase by this process, the kubelet's
	// process (this one in inproc mode) and the supervisor.
	cpuSelf, cpuKubelet, cpuSuper time.Duration
	// cpuInits is the CPU time of the containers' processes started in
	// the phase: the container init's setup (namespaces, mounts,
	// pivot_root) before it execs the entrypoint.
	cpuInits                  time.Duration
	load                      [2]string
	kubelet                   snapshot
	kubeletMem, supervisorMem procMem
}

// phase closes a phase begun at m.
func (n *node) phase(name string, run int, m mark, pods []podTimes, wall time.Duration) phaseResult {
	sp := n.supervisorPID()
	super := procstat.CPU(sp)
	if sp != m.superPID {
		super += m.superv // a new supervisor: all of its time is this phase's
	}
	p := phaseResult{name: name, run: run, pods: pods, wall: wall,
		cpuSelf: procstat.CPU(os.Getpid()) - m.self, cpuKubelet: procstat.CPU(n.kubeletPID) - m.kubelet, cpuSuper: super - m.superv,
		cpuInits: max(childrenCPU(sp)-m.containers, 0),
		load:     [2]string{m.loadBefore, loadAvg()}}
	if s := n.snapshot(); s != nil {
		p.kubelet = s.since(m.metrics)
	}
	return p
}

type report struct {
	mode string
	n    int
	// runDir describes the runtime root's file system.
	runDir string
	phases []phaseResult
	idle   phaseResult
}

func (r *report) write(w io.Writer) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "podstart: mode %s, %d pods per phase, %d CPUs, host %s, %s\n", r.mode, r.n, numCPU(), host, time.Now().Format(time.RFC3339))
	fmt.Fprintf(w, "runtime root: %s; cgroup2 mount: %s\n\n", r.runDir, cgroup2Options())
	fmt.Fprintf(w, "| phase | run | pods | p50 | p99 | max | all Running | load 1m (before→after) |\n|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.phases {
		d := durations(p.pods, podTimes.startup)
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s→%s |\n", p.name, p.run, len(p.pods),
			pct(d, 50), pct(d, 99), pct(d, 100), round(p.wall), p.load[0], p.load[1])
	}
	fmt.Fprintf(w, "\nWhere the time goes, seen from the watch (p50 / p99 per pod):\n\n")
	fmt.Fprintf(w, "| phase | run | create → API answered | create → bound seen | bound seen → Running seen |\n|---|---|---|---|---|\n")
	for _, p := range r.phases {
		api := durations(p.pods, func(t podTimes) time.Duration { return t.created.Sub(t.create) })
		bound := durations(p.pods, func(t podTimes) time.Duration { return t.bound.Sub(t.create) })
		node := durations(p.pods, func(t podTimes) time.Duration { return t.running.Sub(t.bound) })
		fmt.Fprintf(w, "| %s | %d | %s / %s | %s / %s | %s / %s |\n", p.name, p.run,
			pct(api, 50), pct(api, 99), pct(bound, 50), pct(bound, 99), pct(node, 50), pct(node, 99))
	}
	fmt.Fprintf(w, "\nCPU time (user+sys) during each phase, per pod:\n\n")
	kl := "kubelet process"
	if r.mode == "inproc" {
		kl = "this process (everything but the supervisor)"
	}
	fmt.Fprintf(w, "| phase | run | wall | %s | supervisor | container inits | bench + control plane |\n|---|---|---|---|---|---|---|\n", kl)
	for _, p := range r.phases {
		per := func(d time.Duration) string { return round(d / time.Duration(max(len(p.pods), 1))).String() }
		self := per(p.cpuSelf)
		if r.mode == "inproc" {
			self = "(included)"
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", p.name, p.run, round(p.wall), per(p.cpuKubelet), per(p.cpuSuper), per(p.cpuInits), self)
	}
	if d := r.idle.wall; d > 0 {
		pct := func(c time.Duration) string { return fmt.Sprintf("%.1f%%", 100*c.Seconds()/d.Seconds()) }
		fmt.Fprintf(w, "\nidle with %d pods running, %s: %s %s of a CPU, supervisor %s\n", r.n+1, round(d), kl, pct(r.idle.cpuKubelet), pct(r.idle.cpuSuper))
	}
	for _, p := range r.phases {
		if p.kubelet == nil {
			continue
		}
		fmt.Fprintf(w, "\nKubelet phases, %s run %d (histogram buckets: p50/p99 are bucket bounds):\n\n", p.name, p.run)
		writePhases(w, p.kubelet)
	}
	for _, p := range r.phases {
		if p.kubeletMem.RSS == 0 {
			continue
		}
		who := "node (kubelet) process"
		if r.mode == "inproc" {
			who = "all-in-one process (API server, controllers, scheduler, kubelet)"
		}
		fmt.Fprintf(w, "\nmemory after burst run %d (%d pods running): %s %s; supervisor %s; sum RSS %.1f MiB, sum PSS %.1f MiB, node RSS + supervisor private %.1f MiB\n",
			p.run, r.n+1, who, p.kubeletMem, p.supervisorMem, mib(p.kubeletMem.RSS+p.supervisorMem.RSS),
			mib(p.kubeletMem.PSS+p.supervisorMem.PSS), mib(p.kubeletMem.RSS+p.supervisorMem.Private()))
	}
}

func durations(ps []podTimes, f func(podTimes) time.Duration) []time.Duration {
	out := make([]time.Duration, 0, len(ps))
	for _, p := range ps {
		out = append(out, f(p))
	}
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return round(s[i])
}

// round keeps three significant-ish digits.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
