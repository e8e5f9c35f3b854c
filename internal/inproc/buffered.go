package inproc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
)

// buffers recycles the response buffers of buffered requests: a buffer
// returns when the client closes the body it was read through.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// plainWrite reports whether req is a write whose response is never a
// stream: POST, PUT, PATCH or DELETE, not upgrading the connection, not
// through a proxy subresource.
func plainWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	if req.Header.Get("Upgrade") != "" {
		return false
	}
	p := req.URL.Path
	return !strings.Contains(p, "/proxy") && !strings.HasSuffix(p, "/exec") &&
		!strings.HasSuffix(p, "/attach") && !strings.HasSuffix(p, "/portforward")
}

// serveBuffered runs the handler for sreq (the server's copy of req) in the
// calling goroutine and returns its buffered response. cancel ends sreq's
// context once the handler has returned, as a server does when its handler
// finishes.
func (t transport) serveBuffered(sreq, req *http.Request, cancel context.CancelFunc) (resp *http.Response, err error) {
	defer cancel()
	w := &bufferWriter{header: http.Header{}, body: buffers.Get().(*bytes.Buffer)}
	w.body.Reset()
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = panicError(p)
			}
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	if err != nil {
		buffers.Put(w.body)
		return response(req, http.StatusInternalServerError, http.Header{}, io.NopCloser(errReader{err}), -1), nil
	}
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return response(req, w.code, w.header, &bufferBody{r: bytes.NewReader(w.body.Bytes()), buf: w.body}, int64(w.body.Len())), nil
}

// bufferWriter is the ResponseWriter of a buffered request. Like net/http's,
// it freezes the header at WriteHeader (or the first Write): a handler that
// asks for the header after that gets a detached copy, so the header map
// handed to the client is never cloned on the common path.
type bufferWriter struct {
	header http.Header
	late   http.Header // Header() after WriteHeader: changes not sent
	code   int
	body   *bytes.Buffer
}

func (w *bufferWriter) Header() http.Header {
	if w.code == 0 {
		return w.header
	}
	if w.late == nil {
		w.late = w.header.Clone()
	}
	return w.late
}

func (w *bufferWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *bufferWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Flush is a no-op: the whole response is handed over when the handler
// returns.
func (w *bufferWriter) Flush() {}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// bufferBody reads a buffered response; Close gives the buffer back, and
// reads after Close fail as they do on a closed connection's body.
type bufferBody struct {
	mu  sync.Mutex
	r   *bytes.Reader
	buf *bytes.Buffer
}

func (b *bufferBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r == nil {
		return 0, errBodyClosed
	}
	return b.r.Read(p)
}

// WriteTo lets io.Copy take the body in one write.
func (b *bufferBody) WriteTo(w io.Writer) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r == nil {
		return 0, errBodyClosed
	}
	return b.r.WriteTo(w)
}

func (b *bufferBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r != nil {
		b.r = nil
		buffers.Put(b.buf)
		b.buf = nil
	}
	return nil
}

var errBodyClosed = errors.New("inproc: read on closed response body")
