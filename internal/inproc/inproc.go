// Package inproc connects clients to an http.Handler in the same process
// without TCP: a RoundTripper that runs the handler on each request and
// streams its response through a pipe, so watches and log follows work
// exactly as over the network. podkit.Cluster gives it to the scheduler,
// controllers and kubelets it runs next to the API server, each with its
// own trusted identity (TransportAs): they need neither TCP nor
// certificates, and authorization still sees who they are.
package inproc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/auth"
)

// Transport returns a RoundTripper that serves every request with h.
// Requests carry no identity of their own: an API server without an
// Authenticator treats them as it treats every request, one with an
// Authenticator authenticates them by their headers (see TransportAs).
func Transport(h http.Handler) http.RoundTripper { return transport{h: h} }

// TransportAs is Transport for a trusted in-process component acting as
// user: every request carries the identity in its context
// (auth.WithInProcessUser), which the API server's authentication filter
// accepts without credentials. Only code in this process can build such a
// transport, so no network client can claim an in-process identity.
func TransportAs(h http.Handler, user auth.User) http.RoundTripper {
	return transport{h: h, user: user}
}

// RESTConfig returns a client-go configuration that reaches h in process.
// Host is a placeholder: no connection is ever made.
func RESTConfig(h http.Handler) *rest.Config {
	return &rest.Config{
		Host:      "http://podkit.inproc",
		Transport: Transport(h),
		QPS:       -1, // no client-side throttling: there is no network to protect
	}
}

// RESTConfigAs is RESTConfig for a component acting as user (TransportAs):
// the scheduler as system:kube-scheduler, a kubelet as system:node:<name>.
func RESTConfigAs(h http.Handler, user auth.User) *rest.Config {
	rc := RESTConfig(h)
	rc.Transport = TransportAs(h, user)
	rc.UserAgent = user.GetName()
	return rc
}

// Identities of the components podkit.Cluster runs in process, as
// Kubernetes names them.
const (
	LoopbackUser          = "system:apiserver"
	SchedulerUser         = "system:kube-scheduler"
	ControllerManagerUser = "system:kube-controller-manager"
	NodesGroup            = "system:nodes"
	NodeUserPrefix        = "system:node:"
)

// LoopbackIdentity is the API server's own loopback user
// (system:apiserver in system:masters), for embedders' admin clients.
func LoopbackIdentity() auth.User {
	return &auth.DefaultUser{Name: LoopbackUser, Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}}
}

// SchedulerIdentity is the scheduler's user.
func SchedulerIdentity() auth.User {
	return &auth.DefaultUser{Name: SchedulerUser, Groups: []string{auth.GroupAuthenticated}}
}

// ControllerManagerIdentity is the controller manager's user.
func ControllerManagerIdentity() auth.User {
	return &auth.DefaultUser{Name: ControllerManagerUser, Groups: []string{auth.GroupAuthenticated}}
}

// NodeIdentity is node's kubelet: system:node:<node> in system:nodes.
func NodeIdentity(node string) auth.User {
	return &auth.DefaultUser{Name: NodeUserPrefix + node, Groups: []string{NodesGroup, auth.GroupAuthenticated}}
}

type transport struct {
	h    http.Handler
	user auth.User // nil: no in-process identity
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	// Always set (nil for Transport): a request made from inside a handler
	// with that handler's context must not inherit its caller's identity.
	ctx = auth.WithInProcessUser(ctx, t.user)
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
