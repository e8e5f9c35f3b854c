// Package inproc connects clients to an http.Handler in the same process
// without TCP: a RoundTripper that runs the handler on each request and
// streams its response through a pipe, so watches and log follows work
// exactly as over the network. podkit.Cluster gives it to the scheduler,
// controllers and kubelets it runs next to the API server.
package inproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// Transport returns a RoundTripper that serves every request with h.
func Transport(h http.Handler) http.RoundTripper { return transport{h} }

// RESTConfig returns a client-go configuration that reaches h in process.
// Host is a placeholder: no connection is ever made.
func RESTConfig(h http.Handler) *rest.Config {
	return &rest.Config{
		Host:      "http://podkit.inproc",
		Transport: Transport(h),
		QPS:       -1, // no client-side throttling: there is no network to protect
	}
}

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "127.0.0.1:0"
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	pr, pw := io.Pipe()
	w := &writer{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					pw.CloseWithError(fmt.Errorf("inproc: handler aborted the response"))
				} else {
					pw.CloseWithError(fmt.Errorf("inproc: handler panicked: %v", p))
				}
				w.markReady(http.StatusInternalServerError)
				return
			}
			w.markReady(http.StatusOK)
			pw.Close()
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		cancel()
		pr.Close()
		return nil, ctx.Err()
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          &body{PipeReader: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// writer is the handler's ResponseWriter; its body goes into the pipe.
type writer struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{}
	code   int
	sent   http.Header // header as of WriteHeader
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) { w.markReady(code) }

func (w *writer) markReady(code int) {
	w.once.Do(func() {
		w.code, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *writer) Write(b []byte) (int, error) {
	w.markReady(http.StatusOK)
	return w.pw.Write(b)
}

// Flush is a no-op: the pipe hands every write to the reader at once.
func (w *writer) Flush() {}

// body cancels the handler's context when the client closes the response.
type body struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (b *body) Close() error {
	b.cancel()
	return b.PipeReader.Close()
}
