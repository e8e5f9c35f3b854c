package kubelet

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/podkit/podkit/kubelet/status"
)

// statusManager writes pod statuses through the pods/status subresource.
// Workers hand it every status they generate; it keeps only the latest per
// pod and a queue of pods to write (so a burst of changes to one pod makes
// one write), merges each onto what the API server has (status.Merge: no
// regression, other owners' conditions kept), skips writes that change
// nothing the kubelet owns (status.NeedsUpdate), retries conflicts with a
// fresh read and failures with back-off, so a status is never lost. A static
// pod's status goes to its mirror pod.
type statusManager struct {
	k     *Kubelet
	queue workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	desired map[types.UID]*statusEntry
}

type statusEntry struct {
	// writing serialises the writes of the pod's status (the queue's
	// workers and flush).
	writing sync.Mutex

	pod     *corev1.Pod
	status  corev1.PodStatus
	version uint64
	written uint64
	// last is the object the API server returned for the last write: the
	// informer's copy may not have caught up with it yet, and comparing
	// with a stale copy would skip a write that is needed.
	last *corev1.Pod
}

func newStatusManager(k *Kubelet) *statusManager {
	return &statusManager{
		k:       k,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.UID]()),
		desired: map[types.UID]*statusEntry{},
	}
}

// set records the status to write for pod and queues the write.
func (m *statusManager) set(pod *corev1.Pod, st corev1.PodStatus) {
	m.mu.Lock()
	e := m.desired[pod.UID]
	if e == nil {
		e = &statusEntry{}
		m.desired[pod.UID] = e
	}
	e.pod, e.status = pod, st
	e.version++
	m.mu.Unlock()
	m.queue.Add(pod.UID)
}

// requeue queues a write of the status already recorded, even if it was
// written (a mirror pod appeared or was replaced: it must get the status).
func (m *statusManager) requeue(uid types.UID) {
	m.mu.Lock()
	e, ok := m.desired[uid]
	if ok {
		e.written = 0
	}
	m.mu.Unlock()
	if ok {
		m.queue.Add(uid)
	}
}

// forget drops a pod's pending status.
func (m *statusManager) forget(uid types.UID) {
	m.mu.Lock()
	delete(m.desired, uid)
	m.mu.Unlock()
}

// run writes statuses with n workers until ctx ends.
func (m *statusManager) run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				uid, shutdown := m.queue.Get()
				if shutdown {
					return
				}
				if err := m.sync(ctx, uid); err != nil && ctx.Err() == nil {
					m.k.log.Warn("writing pod status", "podUID", uid, "err", err)
					m.queue.AddRateLimited(uid)
				} else {
					m.queue.Forget(uid)
				}
				m.queue.Done(uid)
			}
		}()
	}
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
}

// sync writes uid's latest status if it is not written yet.
func (m *statusManager) sync(ctx context.Context, uid types.UID) error {
	m.mu.Lock()
	e := m.desired[uid]
	m.mu.Unlock()
	if e == nil {
		return nil
	}
	e.writing.Lock()
	defer e.writing.Unlock()
	m.mu.Lock()
	if m.desired[uid] != e || e.written == e.version { // forgotten meanwhile, or written
		m.mu.Unlock()
		return nil
	}
	// The status is shared, not copied: statuses are never modified once
	// generated (reportStatus), and write only reads it.
	pod, st, version, last := e.pod, e.status, e.version, e.last
	m.mu.Unlock()

	done, written, err := m.write(ctx, pod, st, last)
	if err != nil {
		m.k.metrics.statusWrites.WithLabelValues("error").Inc()
		return err
	}
	if !done {
		return nil // no mirror pod yet: requeue writes it
	}
	m.mu.Lock()
	if cur := m.desired[uid]; cur == e && cur.written < version { // not forgotten meanwhile
		cur.written = version
		if written != nil {
			cur.last = written
		}
	}
	m.mu.Unlock()
	return nil
}

// flush writes uid's latest status now (the final status before a pod
// object is deleted).
func (m *statusManager) flush(ctx context.Context, uid types.UID) error {
	return m.sync(ctx, uid)
}

// write merges st onto the API object's status and updates it, retrying
// conflicts with a fresh read. done is false when a static pod has no
// mirror pod to write to yet; written is the object the API server
// returned, if it wrote. last is the object of the previous write.
func (m *statusManager) write(ctx context.Context, pod *corev1.Pod, st corev1.PodStatus, last *corev1.Pod) (done bool, written *corev1.Pod, err error) {
	target, err := m.target(ctx, pod)
	if err != nil {
		return false, nil, err
	}
	if target == nil {
		return !isStaticPod(pod), nil, nil
	}
	if last != nil && last.UID == target.UID && last.ResourceVersion != target.ResourceVersion {
		// Start from what this kubelet wrote last; a conflict brings a
		// fresh copy if someone else wrote since.
		target = last
	}
	pods := m.k.client.CoreV1().Pods(target.Namespace)
	for attempt := 0; ; attempt++ {
		merged := status.Merge(target.Status, st, m.k.clock.Now())
		if !status.NeedsUpdate(target.Status, merged) {
			m.k.metrics.statusWrites.WithLabelValues("unchanged").Inc()
			return true, nil, nil
		}
		// The object sent: target with the merged status. Encoding only
		// reads it, so a shallow copy leaves target (the informer's, or
		// the API server's answer) as it was.
		obj := *target
		obj.Status = merged
		out, err := pods.UpdateStatus(ctx, &obj, metav1.UpdateOptions{})
		switch {
		case err == nil:
			m.k.metrics.statusWrites.WithLabelValues("written").Inc()
			return true, out, nil
		case apierrors.IsNotFound(err):
			return true, nil, nil // gone: nothing to report to
		case apierrors.IsConflict(err) && attempt < 5:
			fresh, gerr := pods.Get(ctx, target.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				return true, nil, nil
			}
			if gerr != nil {
				return false, nil, fmt.Errorf("reading pod %s/%s after a conflict: %w", target.Namespace, target.Name, gerr)
			}
			if fresh.UID != target.UID {
				return true, nil, nil // a new pod of the same name
			}
			target = fresh
		default:
			return false, nil, fmt.Errorf("updating the status of pod %s/%s: %w", target.Namespace, target.Name, err)
		}
	}
}

// target returns the API object that carries pod's status: the pod itself
// (from the informer's cache, else the API), or a static pod's mirror. It
// returns nil when there is none (yet).
func (m *statusManager) target(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if isStaticPod(pod) {
		mirror := m.k.mirrorPodOf(pod)
		if mirror == nil || mirror.Annotations[AnnotationConfigMirror] != pod.Annotations[AnnotationConfigHash] {
			return nil, nil // written once the mirror pod exists
		}
		return mirror, nil
	}
	if cached := m.k.cachedPod(pod.Namespace, pod.Name); cached != nil && cached.UID == pod.UID {
		return cached, nil
	}
	fresh, err := m.k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err)
	case fresh.UID != pod.UID:
		return nil, nil
	}
	return fresh, nil
}
