package server

import (
	"net/http"
	"sync"
)

// maxPending bounds what a follower may buffer ahead of a slow client
// before its writes block.
const maxPending = 1 << 20

// flushWriter streams a follow: writes append to a buffer and wake a
// flusher goroutine, which alone writes to the response and flushes it.
// While it is busy sending, new writes accumulate, so a backlog goes out
// in a few large chunks and a lone new line goes out at once — flushing
// when the reader goes idle, without timers.
type flushWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu    sync.Mutex
	taken *sync.Cond // the flusher took the buffer, or failed
	buf   []byte
	err   error // the first error writing the response

	wake   chan struct{}
	done   chan struct{}
	exited chan struct{}
}

// newFlushWriter sends the response header at once (a quiet container's
// follower sees 200 before any output) and starts the flusher.
func newFlushWriter(w http.ResponseWriter) *flushWriter {
	f := &flushWriter{
		w: w, rc: http.NewResponseController(w),
		wake: make(chan struct{}, 1), done: make(chan struct{}), exited: make(chan struct{}),
	}
	f.taken = sync.NewCond(&f.mu)
	_ = f.rc.Flush()
	go f.loop()
	return f
}

// Write queues p for the flusher; it blocks while maxPending bytes wait.
func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	for len(f.buf) >= maxPending && f.err == nil {
		f.taken.Wait()
	}
	if err := f.err; err != nil {
		f.mu.Unlock()
		return 0, err
	}
	f.buf = append(f.buf, p...)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (f *flushWriter) loop() {
	defer close(f.exited)
	var spare []byte
	for {
		final := false
		select {
		case <-f.wake:
		case <-f.done:
			final = true
		}
		f.mu.Lock()
		out := f.buf
		f.buf = spare[:0]
		f.mu.Unlock()
		f.taken.Broadcast()
		if len(out) > 0 && f.send(out) != nil {
			return
		}
		spare = out
		if final {
			return
		}
	}
}

// send writes and flushes one batch; an error is kept for the writer.
func (f *flushWriter) send(b []byte) error {
	_, err := f.w.Write(b)
	if err == nil {
		err = f.rc.Flush()
	}
	if err != nil {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		f.taken.Broadcast()
	}
	return err
}

// stop sends what is left and ends the flusher; the writer must not be
// used afterwards.
func (f *flushWriter) stop() {
	close(f.done)
	<-f.exited
}
