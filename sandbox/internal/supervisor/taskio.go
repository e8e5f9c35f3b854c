package supervisor

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// captureMax bounds the stderr an exec task's command may put in its
// error.
const captureMax = 4096

// readBufSize is the size of the pooled read buffers.
const readBufSize = 32 << 10

// taskIO copies a task's stdout and stderr pipes into its log sink.
//
// Memory: a task costs two goroutines parked in the runtime's poller and
// no buffer: a copier waits for its pipe to become readable without one
// (RawConn.Read) and borrows a buffer from a pool only for the read
// itself. Idle containers, the common case, cost almost nothing.
type taskIO struct {
	sink    logSink
	readers []*os.File
	bufs    *sync.Pool

	mu        sync.Mutex
	running   int
	done      chan struct{} // closed when both copiers ended (EOF or close)
	capturing bool
	capture   []byte
	closeOnce sync.Once
}

// newTaskIO makes the pipes and starts the copiers; the caller gives the
// returned write ends to the process and then closes them.
func newTaskIO(sink logSink, bufs *sync.Pool, capture bool) (tio *taskIO, stdout, stderr *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, err
	}
	tio = &taskIO{sink: sink, readers: []*os.File{outR, errR}, bufs: bufs, running: 2,
		done: make(chan struct{}), capturing: capture}
	go tio.copy(outR, sink.Stream(stdoutStream), false)
	go tio.copy(errR, sink.Stream(stderrStream), true)
	return tio, outW, errW, nil
}

func (tio *taskIO) copy(r *os.File, w io.WriteCloser, isStderr bool) {
	defer func() {
		w.Close()
		tio.mu.Lock()
		tio.running--
		if tio.running == 0 {
			close(tio.done)
		}
		tio.mu.Unlock()
	}()
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	for {
		var buf *[]byte
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			b := tio.bufs.Get().(*[]byte)
			for {
				n, rerr = unix.Read(int(fd), *b)
				if !errors.Is(rerr, unix.EINTR) {
					break
				}
			}
			if errors.Is(rerr, unix.EAGAIN) {
				tio.bufs.Put(b)
				return false // park in the poller without a buffer
			}
			buf = b
			return true
		})
		if err != nil { // the read end was closed (Delete)
			return
		}
		if n > 0 {
			data := (*buf)[:n]
			w.Write(data)
			if isStderr {
				tio.record(data)
			}
		}
		tio.bufs.Put(buf)
		if n <= 0 || rerr != nil { // EOF: every write end is closed
			return
		}
	}
}

// record keeps the tail of stderr while capturing.
func (tio *taskIO) record(p []byte) {
	tio.mu.Lock()
	defer tio.mu.Unlock()
	if !tio.capturing {
		return
	}
	tio.capture = append(tio.capture, p...)
	if over := len(tio.capture) - captureMax; over > 0 {
		tio.capture = append(tio.capture[:0], tio.capture[over:]...)
	}
}

// captured returns the captured stderr and stops capturing.
func (tio *taskIO) captured() string {
	tio.mu.Lock()
	defer tio.mu.Unlock()
	s := string(tio.capture)
	tio.capturing, tio.capture = false, nil
	return s
}

func (tio *taskIO) stopCapture() { tio.captured() }

// drain waits until the copiers reached EOF, at most grace.
func (tio *taskIO) drain(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-tio.done:
	case <-t.C:
	}
}

// close stops copying (closing the read ends), then closes the sink.
func (tio *taskIO) close() {
	tio.closeOnce.Do(func() {
		for _, r := range tio.readers {
			r.Close()
		}
		<-tio.done
		tio.sink.Close()
	})
}

func newBufPool() *sync.Pool {
	return &sync.Pool{New: func() any {
		b := make([]byte, readBufSize)
		return &b
	}}
}
