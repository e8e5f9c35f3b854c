package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Bounds of the adaptive share of nodes examined per cycle, as Kubernetes.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// ScheduleOne pops one pod and runs its scheduling cycle; the bind runs in
// the background. It returns an error only when the queue is closed or ctx
// is done. Run calls it in a loop; it must not be called concurrently.
func (s *Scheduler) ScheduleOne(ctx context.Context) error {
	p, err := s.queue.Pop(ctx)
	if err != nil {
		return err
	}
	pod := p.Pod
	fw, ok := s.profiles[schedulerNameOf(pod)]
	if !ok {
		s.log.Error("no profile for pod", "pod", podKey(pod), "schedulerName", pod.Spec.SchedulerName)
		return nil
	}
	if pod.DeletionTimestamp != nil {
		s.recorders[fw.name].Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "skip schedule deleting pod: %v/%v", pod.Namespace, pod.Name)
		return nil
	}
	if s.cache.Contains(pod) {
		return nil // assumed (or already bound): a stale copy from an update
	}
	cycle := s.queue.SchedulingCycle()
	start := s.opts.clock.Now()
	state := NewCycleState(s.snapshot)
	node, err := s.schedulePod(ctx, fw, state, pod)
	if err != nil {
		s.handleFailure(ctx, fw, p, err, cycle, start)
		return nil
	}
	// A shallow copy is enough: cached pods are never mutated.
	assumed := *pod
	assumed.Spec.NodeName = node
	stampScheduled(&assumed, node, s.opts.clock.Now())
	if err := s.cache.AssumePod(&assumed); err != nil {
		s.handleFailure(ctx, fw, p, err, cycle, start)
		return nil
	}
	// Wait for a binding slot: backpressure when the API server lags.
	select {
	case s.bindSlots <- struct{}{}:
	case <-ctx.Done():
		_ = s.cache.ForgetPod(&assumed)
		return ctx.Err()
	}
	s.inflight.Add(1)
	s.dispatchBind(bindJob{ctx: ctx, fw: fw, p: p, assumed: &assumed, cycle: cycle, start: start})
	return nil
}

// bindJob is one binding cycle waiting for a binder goroutine.
type bindJob struct {
	ctx     context.Context
	fw      *framework
	p       *QueuedPodInfo
	assumed *corev1.Pod
	cycle   int64
	start   time.Time
}

// dispatchBind hands job, which holds a binding slot, to an idle binder
// goroutine, or starts one. Binders outlive their job and wait for the
// next one (until the job's context ends): a goroutine per bind, as
// Kubernetes starts, grew a fresh stack through the HTTP client's call
// depth on every pod. Binders number at most twice the binding slots
// (all but the slots' count are idle or finishing).
func (s *Scheduler) dispatchBind(job bindJob) {
	select {
	case s.bindJobs <- job:
		return
	default:
	}
	if int(s.binders.Add(1)) <= 2*cap(s.bindSlots) {
		go s.binder(job)
		return
	}
	s.binders.Add(-1)
	select {
	case s.bindJobs <- job:
	case <-job.ctx.Done(): // binders are leaving too: run it here
		s.runBind(job)
	}
}

// binder runs binding cycles until its last job's context is done.
func (s *Scheduler) binder(job bindJob) {
	defer s.binders.Add(-1)
	for {
		s.runBind(job)
		select {
		case job = <-s.bindJobs:
		case <-job.ctx.Done():
			return
		}
	}
}

// runBind runs the job's binding cycle and gives back its slot.
func (s *Scheduler) runBind(job bindJob) {
	defer func() { <-s.bindSlots; s.inflight.Done() }()
	s.bindingCycle(job.ctx, job.fw, job.p, job.assumed, job.cycle, job.start)
}

// schedulePod finds the best node for pod.
func (s *Scheduler) schedulePod(ctx context.Context, fw *framework, state *CycleState, pod *corev1.Pod) (string, error) {
	s.cache.UpdateSnapshot(s.snapshot)
	if s.snapshot.NumNodes() == 0 {
		return "", ErrNoNodesAvailable
	}
	feasible, diag, err := s.findNodesThatFit(ctx, fw, state, pod)
	if err != nil {
		return "", err
	}
	if len(feasible) == 0 {
		return "", &FitError{Pod: pod, NumAllNodes: s.snapshot.NumNodes(), Diagnosis: diag}
	}
	if len(feasible) == 1 {
		return feasible[0].Name(), nil
	}
	totals, err := fw.prioritize(ctx, s.par, state, pod, feasible, &s.buf)
	if err != nil {
		return "", err
	}
	return feasible[s.selectHost(totals)].Name(), nil
}

// selectHost returns the index of a highest total, chosen uniformly at
// random among ties (reservoir sampling).
func (s *Scheduler) selectHost(totals []int64) int {
	best, count := 0, 0
	for i, t := range totals {
		switch {
		case count == 0 || t > totals[best]:
			best, count = i, 1
		case t == totals[best]:
			count++
			if s.rand.IntN(count) == 0 {
				best = i
			}
		}
	}
	return best
}

// numFeasibleNodesToFind is how many feasible nodes to find before
// scoring: all below 100 nodes; else the percentage (adaptive when 0:
// 50% - nodes/125, at least 5%), at least 100.
func numFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	if percentage == 0 {
		percentage = int32(50 - numAllNodes/125)
		if percentage < minFeasibleNodesPercentageToFind {
			percentage = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * int(percentage) / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// findNodesThatFit runs PreFilter, then Filter across nodes in parallel,
// starting where the previous cycle stopped and stopping once enough
// feasible nodes are found.
func (s *Scheduler) findNodesThatFit(ctx context.Context, fw *framework, state *CycleState, pod *corev1.Pod) ([]*NodeInfo, Diagnosis, error) {
	diag := Diagnosis{NodeToStatus: map[string]error{}}
	all := s.snapshot.List()
	if err := fw.runPreFilter(ctx, state, pod); err != nil {
		if !errors.Is(err, ErrUnschedulable) {
			return nil, diag, err
		}
		diag.PreFilterMsg = preFilterMessage(err)
		diag.UnschedulablePlugins = map[string]bool{pluginOf(err): true}
		for _, n := range all {
			diag.NodeToStatus[n.Name()] = err
		}
		return nil, diag, nil
	}
	percentage := s.opts.percentage
	if fw.percentage != nil {
		percentage = *fw.percentage
	}
	numAll := len(all)
	toFind := numFeasibleNodesToFind(percentage, numAll)
	if len(fw.score) == 0 {
		toFind = 1
	}
	start := s.nextStartNodeIndex % numAll
	feasible := grow(&s.buf.feasible, toFind)
	if len(fw.filter) == 0 {
		for i := range feasible {
			feasible[i] = all[(start+i)%numAll]
		}
		s.nextStartNodeIndex = (start + toFind) % numAll
		return feasible, diag, nil
	}
	// Every processed node writes its entry, and the entries are read
	// only when no node fit, which means every node was processed: the
	// buffer needs no clearing (clearing 5,000 pointerful entries per
	// cycle cost more than the filtering it records, under GC).
	statuses := reuse(&s.buf.statuses, numAll)
	var found, processed atomic.Int32
	var internal atomic.Pointer[error]
	fail := func(err error) { internal.CompareAndSwap(nil, &err) }
	s.par.until(numAll, func(i int) bool {
		n := all[(start+i)%numAll]
		rejection, plugin, err := fw.runFilter(ctx, state, pod, n)
		processed.Add(1)
		switch {
		case err != nil:
			fail(err)
			return true
		case rejection != nil:
			statuses[i] = nodeStatus{err: rejection, plugin: plugin}
			return false
		}
		statuses[i] = nodeStatus{}
		k := found.Add(1)
		if int(k) > toFind {
			found.Add(-1)
			processed.Add(-1)
			return true
		}
		feasible[k-1] = n
		return int(k) == toFind
	})
	s.nextStartNodeIndex = (start + int(processed.Load())) % numAll
	if e := internal.Load(); e != nil {
		return nil, diag, *e
	}
	if found.Load() > 0 {
		return feasible[:found.Load()], diag, nil // the diagnosis only explains failures
	}
	for i, st := range statuses {
		if st.err == nil {
			continue
		}
		diag.NodeToStatus[all[(start+i)%numAll].Name()] = st.err
		if diag.UnschedulablePlugins == nil {
			diag.UnschedulablePlugins = map[string]bool{}
		}
		diag.UnschedulablePlugins[st.plugin] = true
	}
	return feasible[:found.Load()], diag, nil
}
