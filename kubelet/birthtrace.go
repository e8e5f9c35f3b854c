package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/trace"
)

// The kubelet's part of the birth trace (package trace). A pod worker
// notes when each of its steps first completed — in memory, a few
// assignments per pod, nothing written — and when the pod first reports
// Ready it merges them with the API server's and the scheduler's steps
// from the pod's annotation, observes the whole trace in the metrics and
// hands one write to the trace writer (birthwriter.go), which sends it in
// the background through pods/status. Which times come from where:
//
//   - seen: when the pod's worker was created (podState.firstSeen);
//   - cgroups, volumes: when those steps of the first sync returned;
//   - sandbox, network: the start and end of the network setup inside
//     RunPodSandbox when Config.NetworkTimer wraps the Networker, else
//     both when RunPodSandbox returned; network's detail is the pod IP;
//   - image:<c>: when the container's image was ready (unpacked), detail
//     pulled (pulled since the pod was seen) or cached;
//   - init:<c>: the runtime's exit time of the init container's
//     successful run; container:<c>: the runtime's start time of the
//     container's first run;
//   - ready: the sync that generated the Ready condition.
//
// Only a birth this kubelet watched is recorded: a pod adopted from the
// runtime after a kubelet restart (no sandbox created here), or whose
// trace already has node steps, gets nothing.

// birthRecord is a worker's notes of its pod's birth.
type birthRecord struct {
	cgroups, volumes, sandbox time.Time
	images                    []trace.Step
	done                      bool
}

// birthStep notes a step of syncPod (called from step, the first time).
func (k *Kubelet) birthStep(st *podState, name string) {
	now := k.clock.Now()
	switch name {
	case StepCgroup:
		st.birth.cgroups = now
	case StepVolumes:
		st.birth.volumes = now
	case StepSandbox:
		st.birth.sandbox = now
	}
}

// birthImage notes that container's image is ready.
func (k *Kubelet) birthImage(st *podState, container string, img *image.Image) {
	if st.birth.done || img == nil {
		return
	}
	name := trace.ContainerStep(trace.StepImage, container)
	for _, s := range st.birth.images {
		if s.Name == name {
			return
		}
	}
	detail := "cached"
	if img.Pulled.After(st.firstSeen) {
		detail = "pulled"
	}
	st.birth.images = append(st.birth.images, trace.Step{Name: name, At: k.clock.Now(), Detail: detail})
}

// birthStatus completes the record the first time the pod's generated
// status is Ready: it observes the trace and queues its write.
func (k *Kubelet) birthStatus(w *podWorker, pod *corev1.Pod, s *corev1.PodStatus) {
	st := &w.st
	if st.birth.done || !podReady(s) {
		return
	}
	st.birth.done = true
	if st.birth.sandbox.IsZero() {
		return // adopted, not born here
	}
	t, traced := trace.FromAnnotations(pod.Annotations)
	if traced && t.Has(trace.StepSeen) {
		return
	}
	if t == nil {
		t = &trace.Trace{}
	}
	k.nodeSteps(t, st, pod)
	t.Add(trace.StepReady, k.clock.Now(), "")
	k.births.metrics.Observe(t)
	if traced && !isStaticPod(pod) {
		k.births.enqueue(pod, trace.Encode(t))
	}
}

// nodeSteps adds the kubelet's steps to t.
func (k *Kubelet) nodeSteps(t *trace.Trace, st *podState, pod *corev1.Pod) {
	b := &st.birth
	t.Add(trace.StepSeen, st.firstSeen, "")
	t.Add(trace.StepCgroups, b.cgroups, "")
	if !b.volumes.IsZero() {
		t.Add(trace.StepVolumes, b.volumes, "")
	}
	rt := k.cache.get(pod.UID)
	sb := rt.latestSandbox()
	sbDone, netDone := b.sandbox, b.sandbox
	if sb != nil && k.cfg.NetworkTimer != nil {
		if start, end, ok := k.cfg.NetworkTimer.take(sb.ID); ok {
			sbDone, netDone = start, end
		}
	}
	t.Add(trace.StepSandbox, sbDone, "")
	if ip := k.podIP(pod, sb); ip != "" || pod.Spec.HostNetwork {
		if pod.Spec.HostNetwork {
			ip = "host network"
		}
		t.Add(trace.StepNetwork, netDone, ip)
	}
	for _, s := range b.images {
		t.Add(s.Name, s.At, s.Detail)
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if at := firstRun(rt.byName(c.Name, ""), true); !at.IsZero() {
			t.Add(trace.ContainerStep(trace.StepInit, c.Name), at, "")
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if at := firstRun(rt.byName(c.Name, ""), false); !at.IsZero() {
			t.Add(trace.ContainerStep(trace.StepContainer, c.Name), at, "")
		}
	}
}

// firstRun is the earliest start (or, with exited, the earliest successful
// exit) among a container's attempts.
func firstRun(attempts []*sandbox.ContainerStatus, exited bool) time.Time {
	var first time.Time
	for _, cs := range attempts {
		at := cs.StartedAt
		if exited {
			if cs.State != sandbox.ContainerStateExited || cs.ExitCode != 0 {
				continue
			}
			at = cs.FinishedAt
		}
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first
}

// podReady says the status has the Ready condition True.
func podReady(s *corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
