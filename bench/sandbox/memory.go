package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/podkit/podkit/internal/procstat"
)

// memPoint is the supervisor's memory with Pods running pods.
type memPoint struct {
	Pods    int
	Sup     procstat.Memory
	Threads int
	// ClientHeap is this process's Go heap in use after a GC: the
	// runtime's in-kubelet bookkeeping (plus the benchmark's own).
	ClientHeap uint64
	Load       string
}

// containerCheck is what was verified about the running containers'
// processes.
type containerCheck struct {
	Checked int
	// Problems lists containers whose process is not the testbox binary,
	// not the supervisor's child, or not alone in its cgroup.
	Problems []string
	// RSS is the median RSS of one `testbox sleep inf` process (the
	// workload's own cost, not overhead).
	RSS uint64
	// SupervisorChildren counts the supervisor's children by command
	// name at the highest pod count.
	SupervisorChildren map[string]int
}

// memResults holds the memory phase's measurements.
type memResults struct {
	SupervisorPID int
	Points        []memPoint
	Containers    containerCheck
	// Pause is the pause process of a shareProcessNamespace pod.
	Pause    procstat.Memory
	PauseExe string
	PausePID int
}

// podCounts are the pod counts measured: 0, max/10 and max.
func podCounts(max int) []int {
	counts := []int{0}
	if m := max / 10; m > 0 && m < max {
		counts = append(counts, m)
	}
	if max > 0 {
		counts = append(counts, max)
	}
	return counts
}

// runMemory starts pods of one `testbox sleep inf` container on a fresh
// supervisor and reads its memory at each count in podCounts.
func runMemory(ctx context.Context, n *node, cfg *config) (*memResults, error) {
	res := &memResults{}
	rt, err := n.newRuntime(ctx, "mem")
	if err != nil {
		return res, err
	}
	var pods []*podState
	defer func() {
		for _, p := range pods {
			if err := n.removePod(context.WithoutCancel(ctx), rt, p); err != nil {
				n.log.Error("memory phase cleanup", "err", err)
			}
		}
		rt.shutdown(context.WithoutCancel(ctx))
	}()
	if res.SupervisorPID, err = rt.supervisorPID(); err != nil {
		return res, err
	}
	for _, target := range podCounts(cfg.Pods) {
		for len(pods) < target {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			p, err := n.startPod(ctx, rt, fmt.Sprintf("mem-%d", len(pods)), false, "sleep", "inf")
			if err != nil {
				return res, fmt.Errorf("pod %d: %w", len(pods), err)
			}
			pods = append(pods, p)
		}
		if err := sleepCtx(ctx, cfg.Settle); err != nil {
			return res, err
		}
		pt, err := measurePoint(res.SupervisorPID, target)
		if err != nil {
			return res, err
		}
		res.Points = append(res.Points, pt)
		n.log.Info("memory", "pods", target, "rss", pt.Sup.RSS, "pss", pt.Sup.PSS)
	}
	if res.Containers, err = checkContainers(ctx, rt, res.SupervisorPID, pods); err != nil {
		return res, err
	}

	// A shareProcessNamespace pod: its pause process is PID 1 of the pod.
	p, err := n.startPod(ctx, rt, "mem-shared", true, "sleep", "inf")
	if err != nil {
		return res, fmt.Errorf("shared-PID pod: %w", err)
	}
	pods = append(pods, p)
	sbs, _, err := rt.List(ctx)
	if err != nil {
		return res, err
	}
	for _, sb := range sbs {
		if sb.ID == p.sandboxID {
			res.PausePID = sb.PausePID
		}
	}
	if res.PausePID == 0 {
		return res, errors.New("the shareProcessNamespace pod has no pause process")
	}
	if res.Pause, err = procstat.ReadMemory(res.PausePID); err != nil {
		return res, err
	}
	res.PauseExe = procExe(res.PausePID)
	return res, nil
}

func measurePoint(pid, pods int) (memPoint, error) {
	pt := memPoint{Pods: pods, Load: loadavg()}
	var err error
	if pt.Sup, err = procstat.ReadMemory(pid); err != nil {
		return pt, err
	}
	pt.Threads = procStatusInt(pid, "Threads")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	pt.ClientHeap = ms.HeapInuse
	return pt, nil
}

// checkContainers verifies that each running container's process is the
// testbox binary itself (the init exec'd it: nothing of the runtime stays
// in the container), a direct child of the supervisor, and alone in its
// cgroup.
func checkContainers(ctx context.Context, rt *runtimeHandle, supPID int, pods []*podState) (containerCheck, error) {
	c := containerCheck{SupervisorChildren: map[string]int{}}
	var rss []uint64
	for _, p := range pods {
		st, err := rt.ContainerStatus(ctx, p.cid)
		if err != nil {
			return c, err
		}
		c.Checked++
		pid := st.PID
		var probs []string
		if exe := procExe(pid); !strings.HasSuffix(exe, testboxPath) {
			probs = append(probs, fmt.Sprintf("exe %q", exe))
		}
		if comm := procComm(pid); comm != "testbox" {
			probs = append(probs, fmt.Sprintf("comm %q", comm))
		}
		if ppid := procStatusInt(pid, "PPid"); ppid != supPID {
			probs = append(probs, fmt.Sprintf("parent %d, not the supervisor %d", ppid, supPID))
		}
		if procs, err := cgroupProcs(pid); err != nil || len(procs) != 1 {
			probs = append(probs, fmt.Sprintf("cgroup holds %v (%v)", procs, err))
		}
		if len(probs) > 0 {
			c.Problems = append(c.Problems, fmt.Sprintf("%s pid %d: %s", p.pod.Name, pid, strings.Join(probs, ", ")))
		}
		if m, err := procstat.ReadMemory(pid); err == nil {
			rss = append(rss, m.RSS)
		}
	}
	if len(rss) > 0 {
		slices.Sort(rss)
		c.RSS = rss[len(rss)/2]
	}
	children, err := procstat.Children(supPID)
	if err != nil {
		return c, err
	}
	for _, pid := range children {
		c.SupervisorChildren[procComm(pid)]++
	}
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
