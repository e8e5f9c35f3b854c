// Package inproc connects clients to an http.Handler in the same process
// without TCP: a RoundTripper that runs the handler on each request and
// streams its response through a pipe, so watches and log follows work
// exactly as over the network. podkit.Cluster gives it to the scheduler,
// controllers and kubelets it runs next to the API server, each with its
// own trusted identity (TransportAs): they need neither TCP nor
// certificates, and authorization still sees who they are.
//
// Writes take a shorter way. A create, update, patch or delete is never a
// stream in the Kubernetes API (exec, attach and port-forward upgrade the
// connection; proxies may stream), so such a request runs its handler in the
// caller's goroutine and hands back the buffered response with its length:
// no goroutine whose stack grows through the whole handler chain, no pipe
// whose every read waits for the writer. That is most of a cluster's
// requests (a pod's birth makes seven writes: create, binding, status, four
// events) and about half the transport's cost of each.
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
	if plainWrite(req) {
		return t.serveBuffered(sreq, req, cancel)
	}
	pp := newPipe()
	w := &writer{header: http.Header{}, pw: pp, ready: make(chan struct{})}
	go func() {
		defer func() {
			if p := recover(); p != nil {
				pp.CloseWriter(panicError(p))
				w.markReady(http.StatusInternalServerError)
				return
			}
			w.markReady(http.StatusOK)
			pp.CloseWriter(nil)
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.ready:
	case <-ctx.Done():
		cancel()
		pp.CloseReader()
		return nil, ctx.Err()
	}
	return response(req, w.code, w.sent, &body{p: pp, cancel: cancel}, -1), nil
}

// response is the client's view of a response to req.
func response(req *http.Request, code int, header http.Header, body io.ReadCloser, length int64) *http.Response {
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          body,
		ContentLength: length,
		Request:       req,
	}
}

// panicError is what the client reads after the handler panicked with p,
// as over the network, where the connection breaks mid-response.
func panicError(p any) error {
	if p == http.ErrAbortHandler {
		return fmt.Errorf("inproc: handler aborted the response")
	}
	return fmt.Errorf("inproc: handler panicked: %v", p)
}

// writer is the handler's ResponseWriter; its body goes into the pipe.
type writer struct {
	header http.Header
	pw     *pipe
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

// Flush is a no-op: every write is the reader's at once.
func (w *writer) Flush() {}

// body cancels the handler's context when the client closes the response.
type body struct {
	p      *pipe
	cancel context.CancelFunc
}

func (b *body) Read(p []byte) (int, error) { return b.p.Read(p) }

func (b *body) Close() error {
	b.cancel()
	return b.p.CloseReader()
}
