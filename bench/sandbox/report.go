package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// stats summarises samples: nearest-rank percentiles.
type stats struct {
	N                   int
	P50, P99, Mean, Max time.Duration
}

func summarize(d []time.Duration) stats {
	if len(d) == 0 {
		return stats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return stats{N: len(s), P50: rank(s, 0.50), P99: rank(s, 0.99), Mean: sum / time.Duration(len(s)), Max: s[len(s)-1]}
}

// rank is the nearest-rank percentile of sorted s.
func rank(s []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

// Markdown formats the results as the section docs/benchmarks.md keeps.
func (r *results) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "### bench/sandbox run %s\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s.\n\n", r.Machine)
	if r.RunDir != "" {
		fmt.Fprintf(&b, "Runtime state (runtime roots, OCI state and bundles): %s; overlay upper dirs and logs on %s.\n\n", r.RunDir, fsType(os.TempDir()))
	}
	if r.CgroupNote != "" {
		fmt.Fprintf(&b, "crun and cgroups: %s.\n\n", r.CgroupNote)
	}
	if r.Latency != nil {
		r.Latency.markdown(&b)
	}
	if r.Memory != nil {
		r.Memory.markdown(&b)
	}
	return b.String()
}

func (l *latencyResults) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "#### Latency: %d iterations per runtime, interleaved, after %d warmup rounds (load average %s → %s)\n\n",
		len(l.Native.UntilStarted), l.Warmup, l.LoadBefore, l.LoadAfter)
	b.WriteString("| step | p50 | p99 | mean | max |\n|---|---|---|---|---|\n")
	row := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		s := summarize(d)
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", name, ms(s.P50), ms(s.P99), ms(s.Mean), ms(s.Max))
	}
	s := &l.Native
	row("native: pod cgroup, EnsurePod (kubelet, before RunPodSandbox; not in the totals)", s.PodCgroup)
	row("native: RunPodSandbox (namespaces, bridge veth + IP, DNS files)", s.Sandbox)
	row("native: CreateContainer (overlay mount, cgroup, spec, init created)", s.Create)
	row("native: StartContainer", s.Start)
	row("**native: sandbox + create + start (until started)**", s.UntilStarted)
	row("native: StartContainer returned → exit event", s.ToExit)
	row("**native: sandbox + create + start + exit event (until exited)**", s.UntilExited)
	row("native: teardown, StopPodSandbox + RemovePodSandbox", s.Teardown)
	row("native: … of which StopPodSandbox (network teardown)", s.Stop)
	row("native: … of which RemovePodSandbox (container, rootfs, cgroup, pins)", s.Remove)
	row("native: pod cgroup Remove (kubelet, after teardown)", s.PodCgroupRemove)
	for _, o := range l.OCI {
		if o.Err == "" {
			row(fmt.Sprintf("**`%s run`** (%s; create + start + exit + delete, no network)", o.Name, o.Version), o.Run)
		}
	}
	b.WriteString("\n")
	l.Profile.markdown(b, summarize(s.Create).P50)
	started, exited := summarize(s.UntilStarted), summarize(s.UntilExited)
	for _, o := range l.OCI {
		if o.Err != "" {
			fmt.Fprintf(b, "- `%s`: not measured: %s\n", o.Name, o.Err)
			continue
		}
		c := summarize(o.Run)
		ratio := float64(started.P50) / float64(c.P50)
		verdict := "met"
		if ratio > 2 {
			verdict = fmt.Sprintf("**missed** by %.0f%%", (ratio/2-1)*100)
		}
		fmt.Fprintf(b, "- native until started ÷ `%s run`: p50 %.2f×, p99 %.2f× (target ≤ 2×: %s); until exited ÷ `%s run`: p50 %.2f×, p99 %.2f×\n",
			o.Name, ratio, float64(started.P99)/float64(c.P99), verdict,
			o.Name, float64(exited.P50)/float64(c.P50), float64(exited.P99)/float64(c.P99))
	}
	b.WriteString("\n")
}

func (m *memResults) markdown(b *strings.Builder) {
	b.WriteString("#### Memory: the supervisor with N running pods (one `testbox sleep inf` container each)\n\n")
	b.WriteString("| pods | supervisor RSS | PSS | private dirty | threads | runtime client Go heap | load |\n|---|---|---|---|---|---|---|\n")
	for _, p := range m.Points {
		fmt.Fprintf(b, "| %d | %s | %s | %s | %d | %s | %s |\n", p.Pods, mib(p.Sup.RSS), mib(p.Sup.PSS),
			mib(p.Sup.PrivateDirty), p.Threads, mib(p.ClientHeap), p.Load)
	}
	b.WriteString("\n")
	if len(m.Points) >= 2 {
		first, last := m.Points[0], m.Points[len(m.Points)-1]
		pods := float64(last.Pods - first.Pods)
		rss := (float64(last.Sup.RSS) - float64(first.Sup.RSS)) / pods
		pss := (float64(last.Sup.PSS) - float64(first.Sup.PSS)) / pods
		heap := (float64(last.ClientHeap) - float64(first.ClientHeap)) / pods
		verdict := "met"
		if rss > 2<<20 {
			verdict = fmt.Sprintf("**missed** by %.0f%%", (rss/(2<<20)-1)*100)
		}
		fmt.Fprintf(b, "- per pod, (RSS%d − RSS%d)/%d: **%s RSS** (target ≤ 2 MiB: %s), %s PSS; runtime client heap %s per pod\n",
			last.Pods, first.Pods, last.Pods-first.Pods, kib(rss), verdict, kib(pss), kib(heap))
		if len(m.Points) == 3 {
			mid := m.Points[1]
			fmt.Fprintf(b, "- marginal, (RSS%d − RSS%d)/%d: %s RSS per pod\n", last.Pods, mid.Pods, last.Pods-mid.Pods,
				kib((float64(last.Sup.RSS)-float64(mid.Sup.RSS))/float64(last.Pods-mid.Pods)))
		}
	}
	if m.PausePID != 0 {
		fmt.Fprintf(b, "- pause process of a shareProcessNamespace pod: RSS %s, PSS %s (%s)\n",
			kib(float64(m.Pause.RSS)), kib(float64(m.Pause.PSS)), m.PauseExe)
	}
	c := m.Containers
	if c.Checked > 0 {
		verdict := "each is the testbox binary itself (exe and comm), a direct child of the supervisor, alone in its cgroup: the init left nothing behind after exec"
		if len(c.Problems) > 0 {
			verdict = fmt.Sprintf("%d problems: %s", len(c.Problems), strings.Join(c.Problems, "; "))
		}
		fmt.Fprintf(b, "- %d container processes checked: %s; a `testbox sleep inf` process itself has RSS %s (the workload, not overhead)\n",
			c.Checked, verdict, mib(c.RSS))
		var kids []string
		for _, k := range slices.Sorted(maps.Keys(c.SupervisorChildren)) {
			kids = append(kids, fmt.Sprintf("%d × %s", c.SupervisorChildren[k], k))
		}
		fmt.Fprintf(b, "- the supervisor's children with %d pods: %s\n", c.Checked, strings.Join(kids, ", "))
	}
	b.WriteString("\n")
}

func (p *profileSamples) markdown(b *strings.Builder, createP50 time.Duration) {
	if len(p.SelfExec) == 0 {
		return
	}
	b.WriteString("Pieces of the native path timed on their own in the same iterations (to attribute CreateContainer):\n\n")
	b.WriteString("| piece | p50 | p99 |\n|---|---|---|\n")
	var sum time.Duration
	for _, r := range []struct {
		name     string
		d        []time.Duration
		inCreate bool
	}{
		{"overlay rootfs mount", p.OverlayMount, true},
		{"container cgroup, EnsureContainer", p.ContainerCgroup, true},
		{"ocispec.Generate", p.Spec, true},
		{"one durable record (write + fsync + rename) in the runtime root", p.Record, false},
		{"fork + exec of this binary up to main (what the container init re-exec pays)", p.SelfExec, true},
		{"fork + exec of the static testbox (the entrypoint)", p.TestboxExec, false},
	} {
		s := summarize(r.d)
		fmt.Fprintf(b, "| %s | %s | %s |\n", r.name, ms(s.P50), ms(s.P99))
		if r.inCreate {
			sum += s.P50
		}
	}
	if sum > createP50 {
		fmt.Fprintf(b, "\nCreateContainer p50 %s; the pieces' p50s add up to more (%s): a disturbed or slowed (race detector) run.\n\n", ms(createP50), ms(sum))
		return
	}
	fmt.Fprintf(b, "\nCreateContainer p50 %s; overlay + cgroup + spec + re-exec p50s add up to %s, leaving %s for the durable records (%s each), the supervisor round trip and the init's mount namespace setup.\n\n",
		ms(createP50), ms(sum), ms(createP50-sum), ms(summarize(p.Record).P50))
}
