package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/trace"
)

// Back-off of the birth trace writes: they wait for nothing, so they
// retry patiently.
const (
	birthRetryBase = 200 * time.Millisecond
	birthRetryMax  = 30 * time.Second
)

// birthWriter writes birth traces in the background, one pods/status write
// each, and retries failures with back-off until the
// write lands, the pod is gone (or another pod took its name), or the
// kubelet stops. The pod workers only queue: a slow API server never
// delays a pod.
type birthWriter struct {
	k       *Kubelet
	metrics *trace.Metrics
	signal  chan struct{}

	mu      sync.Mutex
	pending map[types.UID]*birthWrite
}

type birthWrite struct {
	namespace, name string
	uid             types.UID
	value           string
	next            time.Time
	delay           time.Duration
	// fresh: read the pod from the API server (the last write conflicted).
	fresh bool
}

func newBirthWriter(k *Kubelet) (*birthWriter, error) {
	m, err := trace.NewMetrics(k.cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &birthWriter{k: k, metrics: m, signal: make(chan struct{}, 1), pending: map[types.UID]*birthWrite{}}, nil
}

// enqueue queues the write of pod's trace.
func (b *birthWriter) enqueue(pod *corev1.Pod, value string) {
	b.mu.Lock()
	b.pending[pod.UID] = &birthWrite{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, value: value,
		next: b.k.clock.Now(), delay: birthRetryBase}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// run sends the queued writes until ctx ends.
func (b *birthWriter) run(ctx context.Context) {
	timer := b.k.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wake := b.flush(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(b.k.until(wake))
		select {
		case <-ctx.Done():
			return
		case <-b.signal:
		case <-timer.C():
		}
	}
}

// flush sends every write that is due and returns when the next one is.
func (b *birthWriter) flush(ctx context.Context) time.Time {
	now := b.k.clock.Now()
	wake := now.Add(time.Hour)
	b.mu.Lock()
	var due []*birthWrite
	for _, w := range b.pending {
		if !w.next.After(now) {
			due = append(due, w)
		} else if w.next.Before(wake) {
			wake = w.next
		}
	}
	b.mu.Unlock()
	for _, w := range due {
		if ctx.Err() != nil {
			break
		}
		err := b.write(ctx, w)
		for attempt := 0; apierrors.IsConflict(err) && attempt < 5; attempt++ {
			err = b.write(ctx, w) // from a fresh read, at once
		}
		b.mu.Lock()
		if b.pending[w.uid] != w {
			b.mu.Unlock()
			continue // replaced meanwhile
		}
		if err == nil || permanent(err) {
			delete(b.pending, w.uid)
			switch {
			case apierrors.IsForbidden(err):
				// A node may write the status of the pods bound to it.
				b.k.log.Warn("birth trace not written: forbidden", "pod", w.namespace+"/"+w.name, "err", err)
			case err != nil:
				b.k.log.Debug("birth trace not written", "pod", w.namespace+"/"+w.name, "err", err)
			}
		} else {
			w.next = b.k.clock.Now().Add(w.delay)
			w.delay = min(2*w.delay, birthRetryMax)
			if w.next.Before(wake) {
				wake = w.next
			}
			b.k.log.Debug("writing a birth trace; retrying", "pod", w.namespace+"/"+w.name, "in", w.delay, "err", err)
		}
		b.mu.Unlock()
	}
	return wake
}

// errReplaced: the pod's name now belongs to another pod.
var errReplaced = errors.New("the pod was replaced")

// write sets the trace annotation through pods/status, the one pod write a
// node may make (the API server keeps this annotation of a status write):
// the pod as the informer has it (or, after a conflict, as the API server
// has it), its trace merged with the one queued, its status unchanged.
func (b *birthWriter) write(ctx context.Context, w *birthWrite) error {
	pod := b.k.cachedPod(w.namespace, w.name)
	if pod == nil || pod.UID != w.uid || w.fresh {
		got, err := b.k.client.CoreV1().Pods(w.namespace).Get(ctx, w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod = got
	}
	if pod.UID != w.uid {
		return errReplaced
	}
	t, err := trace.Decode(w.value)
	if err != nil {
		return fmt.Errorf("birth trace of %s/%s: %w", w.namespace, w.name, err)
	}
	if cur, ok := trace.FromAnnotations(pod.Annotations); ok {
		t.Merge(cur)
	}
	obj := pod.DeepCopy()
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[trace.Annotation] = trace.Encode(t)
	_, err = b.k.client.CoreV1().Pods(w.namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	w.fresh = apierrors.IsConflict(err)
	return err
}

// permanent: retrying cannot help (the pod is gone or replaced, or the
// kubelet may not write it).
func permanent(err error) bool {
	return errors.Is(err, errReplaced) || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) ||
		apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsMethodNotSupported(err)
}
