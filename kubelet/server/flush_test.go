package server

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowWriter is a ResponseWriter whose first Write blocks until released.
type slowWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	writes  int
	flushes int
	err     error
	entered chan struct{} // closed when the first Write starts
	release chan struct{} // the first Write returns once closed
}

func newSlowWriter() *slowWriter {
	return &slowWriter{entered: make(chan struct{}), release: make(chan struct{})}
}

func (w *slowWriter) Header() http.Header { return http.Header{} }
func (w *slowWriter) WriteHeader(int)     {}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := w.writes == 0
	w.writes++
	w.mu.Unlock()
	if first {
		close(w.entered)
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	return w.buf.Write(p)
}

func (w *slowWriter) Flush() {
	w.mu.Lock()
	w.flushes++
	w.mu.Unlock()
}

// TestFlushWriterCoalesces: writes made while the client is busy go out
// as one batch, in order, and each batch is flushed.
func TestFlushWriterCoalesces(t *testing.T) {
	w := newSlowWriter()
	fw := newFlushWriter(w)
	var want bytes.Buffer
	line := func(i int) {
		s := fmt.Sprintf("line %d\n", i)
		want.WriteString(s)
		n, err := fw.Write([]byte(s))
		require.NoError(t, err)
		require.Equal(t, len(s), n)
	}
	line(0)
	<-w.entered // the flusher is sending line 0
	for i := 1; i < 1000; i++ {
		line(i)
	}
	close(w.release)
	fw.stop()
	assert.Equal(t, want.String(), w.buf.String())
	assert.Equal(t, 2, w.writes, "line 0, then everything written meanwhile")
	assert.Equal(t, 3, w.flushes, "the header, then each batch")
}

// TestFlushWriterError: a failed send fails the next write.
func TestFlushWriterError(t *testing.T) {
	w := newSlowWriter()
	w.err = errors.New("broken pipe")
	fw := newFlushWriter(w)
	_, err := fw.Write([]byte("a\n"))
	require.NoError(t, err, "queued")
	<-w.entered
	close(w.release)
	for {
		if _, err = fw.Write([]byte("b\n")); err != nil {
			break
		}
	}
	assert.EqualError(t, err, "broken pipe")
	fw.stop()
}
