package scheduler

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// concurrentSink is the event sink of the scheduler's broadcaster. The
// broadcaster hands events to its sink from one goroutine, one write at a
// time, and drops what arrives while 1,000 events wait: a scheduler
// binding thousands of pods a second outran that single writer and lost
// most of its Scheduled events. Kubernetes' scheduler (events.k8s.io
// recorder) writes each event on its own goroutine; this sink writes on a
// fixed set of writers instead, accepting a write at once. The writes of
// one event (a create, then patches when the correlator aggregates it)
// go to the same writer, in order. Transport errors are retried a few
// times; the API server's refusals are not (as the broadcaster does).
type concurrentSink struct {
	next    record.EventSink
	log     *slog.Logger
	backoff time.Duration

	// closed and done say the sink was closed. The queues themselves are
	// never closed, so a send can never panic and never needs a lock: a
	// sender blocked on a full queue gives up when done closes, and
	// writers drain what is queued, then exit.
	closed atomic.Bool
	done   chan struct{}
	queues []chan sinkWrite
	wg     sync.WaitGroup
}

type sinkWrite struct {
	ev    *corev1.Event
	patch []byte // nil: create
}

// sinkTries bounds the attempts of one write.
const sinkTries = 3

// newConcurrentSink starts writers goroutines, each with a queue of depth
// writes, over next.
func newConcurrentSink(next record.EventSink, writers, depth int, backoff time.Duration, log *slog.Logger) *concurrentSink {
	c := &concurrentSink{next: next, log: log, backoff: backoff, done: make(chan struct{}), queues: make([]chan sinkWrite, writers)}
	for i := range c.queues {
		q := make(chan sinkWrite, depth)
		c.queues[i] = q
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.drain(q)
		}()
	}
	return c
}

// drain writes q's writes until the sink is closed, then what is left.
func (c *concurrentSink) drain(q chan sinkWrite) {
	for {
		select {
		case w := <-q:
			c.write(w)
		case <-c.done:
			for {
				select {
				case w := <-q:
					c.write(w)
				default:
					return
				}
			}
		}
	}
}

var _ record.EventSink = (*concurrentSink)(nil)

// Create queues the event's creation and reports success at once.
func (c *concurrentSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return e, c.enqueue(sinkWrite{ev: e.DeepCopy()})
}

// Patch queues the patch behind the event's earlier writes.
func (c *concurrentSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return e, c.enqueue(sinkWrite{ev: e.DeepCopy(), patch: data})
}

// Update writes at once (the broadcaster does not update events).
func (c *concurrentSink) Update(e *corev1.Event) (*corev1.Event, error) { return c.next.Update(e) }

var errSinkClosed = errors.New("event sink closed")

func (c *concurrentSink) enqueue(w sinkWrite) error {
	// A request construction error is final for the broadcaster.
	if c.closed.Load() {
		return &rest.RequestConstructionError{Err: errSinkClosed}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(w.ev.Namespace + "/" + w.ev.Name))
	select {
	case c.queues[h.Sum32()%uint32(len(c.queues))] <- w:
		return nil
	case <-c.done:
		return &rest.RequestConstructionError{Err: errSinkClosed}
	}
}

// write performs one queued write, retrying transport errors.
func (c *concurrentSink) write(w sinkWrite) {
	for attempt := 1; ; attempt++ {
		var err error
		if w.patch != nil {
			_, err = c.next.Patch(w.ev, w.patch)
		}
		if w.patch == nil || apierrors.IsNotFound(err) { // the event may be gone: create it
			w.ev.ResourceVersion = ""
			_, err = c.next.Create(w.ev)
		}
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) || attempt >= sinkTries || c.closed.Load() {
			if err != nil && !apierrors.IsAlreadyExists(err) {
				c.log.Debug("event not written", "event", w.ev.Namespace+"/"+w.ev.Name, "reason", w.ev.Reason, "err", err)
			}
			return
		}
		time.Sleep(c.backoff << (attempt - 1))
	}
}

// close stops accepting writes and waits until the queued ones are done
// (without retries), or until ctx ends.
func (c *concurrentSink) close(ctx context.Context) {
	if c.closed.CompareAndSwap(false, true) {
		close(c.done)
	}
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}
