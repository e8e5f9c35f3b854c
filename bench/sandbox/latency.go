package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/podkit/podkit/sandbox"
)

// nativeSamples are the native runtime's per-phase latencies, one entry
// per measured iteration.
type nativeSamples struct {
	// PodCgroup is the kubelet's EnsurePod before RunPodSandbox (not in
	// the totals), PodCgroupRemove its Remove after teardown.
	PodCgroup, PodCgroupRemove []time.Duration
	Sandbox, Create, Start     []time.Duration
	// UntilStarted is Sandbox+Create+Start: RunPodSandbox called to
	// StartContainer returned.
	UntilStarted []time.Duration
	// ToExit is StartContainer returned to the exit event received;
	// UntilExited is RunPodSandbox called to the exit event.
	ToExit, UntilExited []time.Duration
	// Teardown is StopPodSandbox + RemovePodSandbox (Stop and Remove
	// each).
	Teardown, Stop, Remove []time.Duration
}

// latencyResults holds the latency phase's samples.
type latencyResults struct {
	N, Warmup  int
	Native     nativeSamples
	Profile    profileSamples
	OCI        []*ociRuntime
	LoadBefore string
	LoadAfter  string
}

// runLatency interleaves native, crun and runc iterations: warmup rounds
// first (not recorded), then cfg.N measured rounds.
func runLatency(ctx context.Context, n *node, cfg *config) (*latencyResults, error) {
	res := &latencyResults{N: cfg.N, Warmup: cfg.Warmup, LoadBefore: loadavg()}
	defer func() { res.LoadAfter = loadavg() }()
	rt, err := n.newRuntime(ctx, "lat")
	if err != nil {
		return res, err
	}
	defer rt.shutdown(context.WithoutCancel(ctx))
	w, err := watchExits(ctx, rt)
	if err != nil {
		return res, err
	}
	for _, name := range cfg.OCI {
		res.OCI = append(res.OCI, n.newOCIRuntime(ctx, name))
	}
	for i := range cfg.Warmup + cfg.N {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		record := i >= cfg.Warmup
		if err := n.nativeOnce(ctx, rt, w, i, record, &res.Native); err != nil {
			return res, fmt.Errorf("native iteration %d: %w", i, err)
		}
		if err := n.profileOnce(ctx, rt, i, record, &res.Profile); err != nil {
			return res, fmt.Errorf("profile iteration %d: %w", i, err)
		}
		for _, o := range res.OCI {
			if o.Err != "" {
				continue
			}
			d, err := n.ociOnce(ctx, o, i)
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				o.Err = err.Error()
				n.log.Warn("OCI runtime failed: leaving it out", "runtime", o.Name, "err", err)
				continue
			}
			if record {
				o.Run = append(o.Run, d)
			}
		}
		if record && (i-cfg.Warmup+1)%50 == 0 {
			n.log.Info("latency", "iterations", i-cfg.Warmup+1, "of", cfg.N)
		}
	}
	return res, nil
}

// nativeOnce runs one pod of one `testbox exit 0` container through the
// kubelet's calls and times each.
func (n *node) nativeOnce(ctx context.Context, rt *runtimeHandle, w *exitWatcher, i int, record bool, s *nativeSamples) (err error) {
	name := fmt.Sprintf("lat-%d", i)
	uid := name + "-" + randomHex(4)
	p := &podState{pod: benchPod(name, uid)}
	defer func() {
		if rerr := n.removePod(context.WithoutCancel(ctx), rt, p); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if p.scratch, err = newScratch(filepath.Join(n.tmpDir, "scratch"), uid, n.lower); err != nil {
		return err
	}
	logDir := filepath.Join(n.tmpDir, "logs", uid)

	t0 := time.Now()
	if p.cgroup, err = n.tree.EnsurePod(ctx, p.pod); err != nil {
		return err
	}
	t1 := time.Now()
	sb, err := rt.RunPodSandbox(ctx, sandboxConfig(p.pod, p.cgroup, logDir, false))
	if err != nil {
		return err
	}
	p.sandboxID = sb.ID
	t2 := time.Now()
	if p.cid, err = rt.CreateContainer(ctx, sb.ID, containerConfig(p.scratch.mounts, "exit", "0")); err != nil {
		return err
	}
	t3 := time.Now()
	exited := w.expect(p.cid)
	if err := rt.StartContainer(ctx, p.cid); err != nil {
		w.forget(p.cid)
		return err
	}
	t4 := time.Now()
	var t5 time.Time
	select {
	case t5 = <-exited:
	case <-time.After(30 * time.Second):
		w.forget(p.cid)
		return fmt.Errorf("container %s: no exit event within 30s", p.cid)
	case <-ctx.Done():
		w.forget(p.cid)
		return ctx.Err()
	}
	st, err := rt.ContainerStatus(ctx, p.cid)
	if err != nil {
		return err
	}
	if st.State != sandbox.ContainerStateExited || st.ExitCode != 0 {
		return fmt.Errorf("container %s: state %s exit code %d (%s), want exited 0", p.cid, st.State, st.ExitCode, st.Message)
	}

	t6 := time.Now()
	if err := rt.StopPodSandbox(ctx, p.sandboxID); err != nil {
		return err
	}
	t6b := time.Now()
	if err := rt.RemovePodSandbox(ctx, p.sandboxID); err != nil {
		return err
	}
	p.sandboxID = ""
	t7 := time.Now()
	if err := n.tree.Remove(ctx, p.cgroup); err != nil {
		return err
	}
	p.cgroup = ""
	t8 := time.Now()

	if record {
		s.PodCgroup = append(s.PodCgroup, t1.Sub(t0))
		s.Sandbox = append(s.Sandbox, t2.Sub(t1))
		s.Create = append(s.Create, t3.Sub(t2))
		s.Start = append(s.Start, t4.Sub(t3))
		s.UntilStarted = append(s.UntilStarted, t4.Sub(t1))
		s.ToExit = append(s.ToExit, t5.Sub(t4))
		s.UntilExited = append(s.UntilExited, t5.Sub(t1))
		s.Teardown = append(s.Teardown, t7.Sub(t6))
		s.Stop = append(s.Stop, t6b.Sub(t6))
		s.Remove = append(s.Remove, t7.Sub(t6b))
		s.PodCgroupRemove = append(s.PodCgroupRemove, t8.Sub(t7))
	}
	return nil
}
