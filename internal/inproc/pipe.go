package inproc

import (
	"io"
	"sync"
)

// pipe carries a streamed response (a watch, a log follow) from the
// handler to the client. Unlike io.Pipe, whose every Write waits until the
// reader has taken all of it (a goroutine hand-off per watch event, two
// when the reader takes a frame's header and body apart), writes append to
// a buffer and return; the reader takes whatever is buffered. A writer
// more than pipeLimit bytes ahead waits, as a TCP sender does when the
// window is full, so a stalled client still holds the handler back.
type pipe struct {
	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte
	off    int   // read position in buf
	werr   error // set by CloseWithError/Close of the writer: reads end with it once drained
	rerr   error // set by Close of the reader: writes fail with it
	closed bool  // the writer closed
}

// pipeLimit is how far a writer may get ahead of its reader.
const pipeLimit = 1 << 20

func newPipe() *pipe {
	p := &pipe{}
	p.cond.L = &p.mu
	return p
}

// Write appends b, waiting while more than pipeLimit bytes are unread.
func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.rerr != nil {
			return 0, p.rerr
		}
		if p.closed {
			return 0, io.ErrClosedPipe
		}
		if len(p.buf)-p.off <= pipeLimit {
			break
		}
		p.cond.Wait()
	}
	switch {
	case p.off == len(p.buf): // drained: start over at the front
		p.buf, p.off = p.buf[:0], 0
	case p.off > 64<<10 && p.off > len(p.buf)/2: // a reader that never quite catches up
		p.buf, p.off = append(p.buf[:0], p.buf[p.off:]...), 0
	}
	p.buf = append(p.buf, b...)
	p.cond.Broadcast()
	return len(b), nil
}

// Read takes up to len(b) buffered bytes, waiting for some.
func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.rerr != nil {
			return 0, io.ErrClosedPipe
		}
		if p.off < len(p.buf) {
			n := copy(b, p.buf[p.off:])
			p.off += n
			p.cond.Broadcast() // a writer may wait for room
			return n, nil
		}
		if p.closed {
			return 0, p.werr
		}
		p.cond.Wait()
	}
}

// CloseWriter ends the stream: reads return the buffered bytes, then err
// (io.EOF when nil).
func (p *pipe) CloseWriter(err error) {
	if err == nil {
		err = io.EOF
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed, p.werr = true, err
	}
	p.cond.Broadcast()
}

// CloseReader is the client closing the body: pending and later writes
// fail, the buffer is dropped.
func (p *pipe) CloseReader() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rerr == nil {
		p.rerr = io.ErrClosedPipe
	}
	p.buf, p.off = nil, 0
	p.cond.Broadcast()
	return nil
}
