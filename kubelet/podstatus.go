package kubelet

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/crilog"
)

// Termination message limits, as Kubernetes' kubelet.
const (
	maxTerminationMessage         = 4 * 1024
	maxTerminationMessageLogBytes = 2 * 1024
	maxTerminationMessageLogLines = 80
)

// reasonBlocked is the waiting reason of containers of a pod that soft
// admission holds back.
const reasonBlocked = "Blocked"

// reportStatus generates the pod's status from the runtime's view, the
// prober and the kubelet's own reasons, merges it onto the last one, and
// hands it to the status manager. terminal says nothing of the pod will
// run again.
func (k *Kubelet) reportStatus(w *podWorker, pod *corev1.Pod, terminal bool) corev1.PodStatus {
	st := &w.st
	rt := k.cache.get(pod.UID)
	in := pod
	if st.last != nil && (pod.Status.Reason != st.last.Reason || pod.Status.Message != st.last.Message) {
		// Generate falls back to the API's phase reason when the kubelet
		// has none; the API's copy may predate the kubelet's last write
		// (a soft rejection the kubelet lifted), so it gets the kubelet's.
		cp := *pod // Generate only reads it
		cp.Status.Reason, cp.Status.Message = st.last.Reason, st.last.Message
		in = &cp
	}
	gen := status.Generate(status.Input{
		Pod:        in,
		Old:        st.last,
		Sandbox:    rt.latestSandbox(),
		Containers: k.withTerminationMessages(st, pod, rt.Containers),
		Probes:     k.prober,
		Waiting:    st.waiting, // read only, during the call
		NodeIPs:    k.nodeIPs(),
		Terminal:   terminal,
		Override:   st.override,
	})
	base := pod.Status
	if st.last != nil {
		base = *st.last
	}
	merged := status.Merge(base, gen, k.clock.Now())
	// A generated status is never modified once made (Merge and its
	// readers copy what they change), so the worker's last status, the
	// readers' and the status manager's share it.
	st.last = &merged
	w.mu.Lock()
	w.lastStatus = st.last
	w.mu.Unlock()
	k.status.set(pod, merged)
	k.observeStart(st, pod, &merged)
	k.birthStatus(w, pod, &merged)
	return merged
}

// observeStart records the pod start metrics the first time all of the
// pod's app containers run.
func (k *Kubelet) observeStart(st *podState, pod *corev1.Pod, s *corev1.PodStatus) {
	if st.startObserved || s.Phase != corev1.PodRunning || len(s.ContainerStatuses) == 0 {
		return
	}
	for _, cs := range s.ContainerStatuses {
		if cs.State.Running == nil {
			return
		}
	}
	st.startObserved = true
	now := k.clock.Now()
	k.metrics.podStart.Observe(now.Sub(st.firstSeen).Seconds())
	if !pod.CreationTimestamp.IsZero() {
		k.metrics.podStartSLI.Observe(max(now.Sub(pod.CreationTimestamp.Time)-st.pullTime, 0).Seconds())
	}
}

// withTerminationMessages returns the containers with the termination
// messages of exited ones appended to their runtime message, as Kubernetes
// does: the file at terminationMessagePath (at most 4 KiB), or with policy
// FallbackToLogsOnError and a failure, the end of the log (80 lines, 2 KiB).
func (k *Kubelet) withTerminationMessages(st *podState, pod *corev1.Pod, cs []*sandbox.ContainerStatus) []*sandbox.ContainerStatus {
	out := make([]*sandbox.ContainerStatus, len(cs))
	for i, c := range cs {
		out[i] = c
		if c.State != sandbox.ContainerStateExited {
			continue
		}
		msg, ok := st.termMessages[c.ID]
		if !ok {
			msg = k.readTerminationMessage(c)
			if st.termMessages == nil {
				st.termMessages = map[string]string{}
			}
			st.termMessages[c.ID] = msg
		}
		if msg == "" {
			continue
		}
		cp := *c
		if cp.Message != "" {
			cp.Message += ": "
		}
		cp.Message += msg
		out[i] = &cp
	}
	return out
}

func (k *Kubelet) readTerminationMessage(c *sandbox.ContainerStatus) string {
	fallback := c.Annotations[AnnotationTerminationMessagePolicy] == string(corev1.TerminationMessageFallbackToLogsOnError) &&
		c.ExitCode != 0 && c.Reason != sandbox.ReasonStartError
	if p := c.Annotations[AnnotationTerminationLog]; p != "" {
		b, err := readTail(p, maxTerminationMessage)
		switch {
		case err == nil && len(b) > 0:
			return string(b)
		case err != nil && !os.IsNotExist(err):
			return "Error on reading termination log " + p + ": " + err.Error()
		}
	}
	if !fallback || c.LogPath == "" {
		return ""
	}
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := crilog.ReadLogs(ctx, c.LogPath, crilog.ReadOptions{TailLines: maxTerminationMessageLogLines}, &buf, &buf); err != nil {
		return "Error on reading termination message from logs: " + err.Error()
	}
	b := buf.Bytes()
	if len(b) > maxTerminationMessageLogBytes {
		b = b[len(b)-maxTerminationMessageLogBytes:]
	}
	return string(b)
}

// readTail reads at most n bytes from the end of a file.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := fi.Size() - n; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// updateProber tells the prober which containers of the pod run in its
// sandbox (a new container ID resets its probes; none pauses them).
func (k *Kubelet) updateProber(pod *corev1.Pod, sb *sandbox.Sandbox) {
	rt := k.cache.get(pod.UID)
	ip := k.podIP(pod, sb)
	update := func(c *corev1.Container) {
		attempts := rt.byName(c.Name, sb.ID)
		if len(attempts) > 0 && attempts[0].State == sandbox.ContainerStateRunning {
			k.prober.UpdateContainer(pod.UID, c.Name, attempts[0].ID, attempts[0].StartedAt, ip)
			return
		}
		k.prober.UpdateContainer(pod.UID, c.Name, "", time.Time{}, ip)
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			update(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		update(&pod.Spec.Containers[i])
	}
}

// blockPod holds a pod that soft admission refused: Pending with the
// reason, its containers waiting "Blocked", and none of them running.
func (k *Kubelet) blockPod(ctx context.Context, w *podWorker, pod *corev1.Pod, rt podRuntime, reason, msg string) {
	st := &w.st
	if st.override == nil || st.override.Reason != reason {
		k.event(pod, corev1.EventTypeWarning, reason, msg)
	}
	st.override = &status.Override{Phase: corev1.PodPending, Reason: reason, Message: msg}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			st.waiting[cs[i].Name] = status.Waiting{Reason: reasonBlocked}
		}
	}
	if err := k.killContainers(ctx, pod, rt.Containers, nil); err != nil {
		k.log.Warn("stopping a blocked pod's containers", "pod", podKey(pod), "err", err)
	}
	k.reportStatus(w, pod, false)
}

// clearWaiting forgets the waiting reasons equal to reason.
func clearWaiting(st *podState, reason string) {
	for n, r := range st.waiting {
		if r.Reason == reason {
			delete(st.waiting, n)
		}
	}
}
