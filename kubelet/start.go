package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

// errBackOff: a start was not attempted because of a back-off.
var errBackOff = errors.New("back-off")

// execute runs a plan: kills first, then starts in order; an init
// container that fails to start stops the rest. It returns when something
// must be retried (a back-off's end, or RetryInterval after a failure),
// zero for nothing.
func (k *Kubelet) execute(ctx context.Context, w *podWorker, pod *corev1.Pod, sb *sandbox.Sandbox, a podActions, rt podRuntime) time.Time {
	var wake time.Time
	soon := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	for _, ka := range a.kill {
		if err := k.killContainer(ctx, pod, ka.cs, ka.spec, ka.message, ka.grace); err != nil {
			k.log.Warn("killing a container", "pod", podKey(pod), "container", ka.spec.Name, "err", err)
			soon(k.clock.Now().Add(k.cfg.RetryInterval))
			continue
		}
		if ka.remove {
			k.removeContainer(ctx, w, ka.cs)
		}
	}
	keychain := k.lazyKeychain(ctx, pod)
	t0 := k.clock.Now()
	for _, sa := range a.start {
		if ctx.Err() != nil {
			break
		}
		if !sa.init && w.st.initStart != (time.Time{}) {
			k.step(&w.st, StepInit, w.st.initStart)
		}
		if sa.init && w.st.initStart.IsZero() {
			w.st.initStart = k.clock.Now()
		}
		t, err := k.startContainer(ctx, w, pod, sb, sa, keychain)
		soon(t)
		if err != nil && sa.init {
			break
		}
	}
	if len(a.start) > 0 && !a.start[0].init {
		k.step(&w.st, StepContainers, t0)
	}
	return wake
}

// lazyKeychain returns a function reading the pod's image pull secrets the
// first time an image is pulled during this sync.
func (k *Kubelet) lazyKeychain(ctx context.Context, pod *corev1.Pod) func() authn.Keychain {
	var once sync.Once
	var kc authn.Keychain
	return func() authn.Keychain {
		once.Do(func() { kc = k.pullKeychain(ctx, pod) })
		return kc
	}
}

// startContainer starts one container as the kubelet's startContainer:
// back-off check, image, configuration, create, start, postStart hook,
// with Kubernetes' events and waiting reasons at each failure. It returns
// when to retry and the error.
func (k *Kubelet) startContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, sb *sandbox.Sandbox, sa startAction,
	keychain func() authn.Keychain) (time.Time, error) {
	st := &w.st
	c := sa.spec
	retry := k.clock.Now().Add(k.cfg.RetryInterval)
	if sa.prev != nil {
		key := crashKey(pod, c)
		if in, end := k.crashBackoff.InBackOffSince(key, sa.prev.FinishedAt); in {
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventBackOff,
				fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, status.PodFullName(pod)))
			st.waiting[c.Name] = status.Waiting{Reason: status.ReasonCrashLoopBackOff,
				Message: status.CrashLoopBackOffMessage(k.crashBackoff.Get(key), c.Name, pod)}
			return end, errBackOff
		}
		k.crashBackoff.Next(key, sa.prev.FinishedAt)
	}

	tImage := k.clock.Now()
	img, wake, err := k.ensureImage(ctx, w, pod, c, keychain)
	if err != nil {
		return wake, err
	}
	attempt := k.nextAttempt(st, pod, c.Name)
	tConfig := k.clock.Now()
	cfg, err := k.containerConfig(ctx, w, pod, sb, c, sa.init, attempt, img)
	if err != nil {
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+err.Error())
		st.waiting[c.Name] = status.Waiting{Reason: status.ReasonCreateContainerConfigError, Message: err.Error()}
		return retry, err
	}
	tCreate := k.clock.Now()
	st.containersCreated = true
	id, err := k.runtime.CreateContainer(ctx, sb.ID, cfg)
	if err != nil {
		k.releaseContainerFiles(ctx, cfg.Annotations)
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+err.Error())
		st.waiting[c.Name] = status.Waiting{Reason: status.ReasonCreateContainerError, Message: err.Error()}
		return retry, err
	}
	k.refreshContainer(ctx, id)
	k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventCreated, "Created container: "+c.Name)
	tStart := k.clock.Now()
	if err := k.runtime.StartContainer(ctx, id); err != nil {
		k.refreshContainer(ctx, id)
		k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailed, "Error: "+err.Error())
		st.waiting[c.Name] = status.Waiting{Reason: status.ReasonRunContainerError, Message: err.Error()}
		return retry, err
	}
	cs := k.refreshContainer(ctx, id)
	if k.log.Enabled(ctx, slog.LevelDebug) {
		// Where a start's time goes, for profiling pod startup.
		k.log.Debug("container started", "pod", podKey(pod), "container", c.Name,
			"image", tConfig.Sub(tImage), "config", tCreate.Sub(tConfig), "create", tStart.Sub(tCreate), "start", k.clock.Since(tStart))
	}
	k.containerEvent(pod, c.Name, corev1.EventTypeNormal, EventStarted, "Started container "+c.Name)
	delete(st.waiting, c.Name)
	if cs == nil || cs.State == sandbox.ContainerStateExited {
		// Gone already: look again at once rather than wait for news.
		return k.clock.Now(), nil
	}
	if !sa.init || isSidecar(c) {
		k.prober.UpdateContainer(pod.UID, c.Name, id, cs.StartedAt, k.podIP(pod, sb))
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if msg, err := k.runHook(ctx, pod, c, id, sb, c.Lifecycle.PostStart, 0); err != nil {
			k.log.Info("postStart hook failed", "pod", podKey(pod), "container", c.Name, "err", err)
			k.containerEvent(pod, c.Name, corev1.EventTypeWarning, EventFailedPostStartHook, msgPostStartFailed)
			if kerr := k.killContainer(ctx, pod, cs, c, "FailedPostStartHook", nil); kerr != nil {
				k.log.Warn("killing a container after its postStart hook failed", "pod", podKey(pod), "container", c.Name, "err", kerr)
			}
			st.waiting[c.Name] = status.Waiting{Reason: status.ReasonPostStartHookError, Message: msg}
			return time.Time{}, err
		}
	}
	return time.Time{}, nil
}

// crashKey is a container's CrashLoopBackOff key.
func crashKey(pod *corev1.Pod, c *corev1.Container) string {
	return string(pod.UID) + "/" + c.Name + "/" + containerHash(c)
}

// logFileName matches <n>.log (and rotated <n>.log.<time>) log files.
var logFileName = regexp.MustCompile(`^(\d+)\.log(\..*)?$`)

// nextAttempt is a container's next restart count: one more than its
// newest attempt the runtime knows, else one more than its newest log file
// (the runtime may have forgotten it, as after a node reboot), else 0. A
// log directory the worker created holds no log before its first
// container.
func (k *Kubelet) nextAttempt(st *podState, pod *corev1.Pod, name string) uint32 {
	var next uint32
	found := false
	for _, cs := range k.cache.get(pod.UID).byName(name, "") {
		found = true
		next = max(next, cs.Attempt+1)
	}
	if found || (st.newLogDir && !st.containersCreated) {
		return next
	}
	ents, err := os.ReadDir(filepath.Join(k.pathsOf(st, pod).logDir, name))
	if err != nil {
		return 0
	}
	for _, e := range ents {
		m := logFileName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if n, err := strconv.ParseUint(m[1], 10, 32); err == nil {
			next = max(next, uint32(n)+1)
		}
	}
	return next
}
