package prober

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// recorder is a handler that records the last request it served.
type recorder struct {
	mu  sync.Mutex
	req *http.Request
}

func (r *recorder) last() *http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.req
}

func newHTTPServer(t *testing.T, rec *recorder) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.req = r.Clone(r.Context())
		rec.mu.Unlock()
		if code := r.URL.Query().Get("code"); code != "" {
			n, _ := strconv.Atoi(code)
			w.WriteHeader(n)
			fmt.Fprint(w, "secret body")
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
		fmt.Fprint(w, "moved")
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 1<<20))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPProbe(t *testing.T) {
	rec := &recorder{}
	srv := newHTTPServer(t, rec)
	host, port := hostPort(t, srv.Listener.Addr().String())
	refused := closedPort(t)
	m := newTestManager(t, nil)

	named := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	tests := []struct {
		name      string
		kind      Kind
		path      string
		port      intstr.IntOrString
		container *corev1.Container
		result    Result
		event     string
		message   string
		errored   bool
	}{
		{name: "200", kind: Readiness, path: "/healthz", port: intstr.FromInt(port), result: Success},
		{name: "204", kind: Readiness, path: "/?code=204", port: intstr.FromInt(port), result: Success},
		{name: "3xx not followed is a success with a warning", kind: Readiness, path: "/?code=399", port: intstr.FromInt(port), result: Success,
			event: EventProbeWarning, message: "Readiness probe warning: Probe terminated redirects, Response body: secret body"},
		{name: "500", kind: Liveness, path: "/?code=500", port: intstr.FromInt(port), result: Failure,
			event: EventUnhealthy, message: "Liveness probe failed: HTTP probe failed with statuscode: 500"},
		{name: "404", kind: Readiness, path: "/?code=404", port: intstr.FromInt(port), result: Failure,
			event: EventUnhealthy, message: "Readiness probe failed: HTTP probe failed with statuscode: 404"},
		{name: "400", kind: Startup, path: "/?code=400", port: intstr.FromInt(port), result: Failure,
			event: EventUnhealthy, message: "Startup probe failed: HTTP probe failed with statuscode: 400"},
		{name: "named port", kind: Readiness, path: "/", port: intstr.FromString("http"), container: named, result: Success},
		{name: "number as string", kind: Readiness, path: "/", port: intstr.FromString(strconv.Itoa(port)), result: Success},
		{name: "unknown port name", kind: Readiness, path: "/", port: intstr.FromString("web"), result: Failure, errored: true,
			event: EventUnhealthy, message: `Readiness probe errored and resulted in unknown state: strconv.Atoi: parsing "web": invalid syntax`},
		{name: "port out of range", kind: Liveness, path: "/", port: intstr.FromInt(70000), result: Failure, errored: true,
			event: EventUnhealthy, message: "Liveness probe errored and resulted in unknown state: invalid port number: 70000"},
		{name: "same-host redirect followed", kind: Readiness, path: "/redirect?to=/healthz", port: intstr.FromInt(port), result: Success},
		{name: "same-host redirect to failure", kind: Readiness, path: "/redirect?to=/%3Fcode=503", port: intstr.FromInt(port), result: Failure,
			event: EventUnhealthy, message: "Readiness probe failed: HTTP probe failed with statuscode: 503"},
		{name: "other-host redirect not followed", kind: Readiness,
			path: "/redirect?to=" + strings.ReplaceAll("http://localhost:"+strconv.Itoa(port)+"/", ":", "%3A"), port: intstr.FromInt(port),
			result: Success, event: EventProbeWarning, message: "Readiness probe warning: Probe terminated redirects, Response body: moved"},
		{name: "redirect loop", kind: Liveness, path: "/loop", port: intstr.FromInt(port), result: Failure,
			event: EventUnhealthy, message: `Liveness probe failed: Get "/loop": stopped after 10 redirects`},
		{name: "refused", kind: Readiness, path: "/", port: intstr.FromInt(refused), result: Failure, event: EventUnhealthy,
			message: fmt.Sprintf(`Readiness probe failed: Get "http://127.0.0.1:%d/": dial tcp 127.0.0.1:%d: connect: connection refused`, refused, refused)},
		{name: "large body", kind: Readiness, path: "/big", port: intstr.FromInt(port), result: Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runOnce(t, m, tt.kind, httpProbe(tt.path, tt.port), tt.container, host)
			assert.Equal(t, tt.result, o.result)
			assert.Equal(t, tt.errored, o.err != nil, "errored: %v", o.err)
			assert.Equal(t, tt.event, o.event)
			assert.Equal(t, tt.message, o.message)
		})
	}
}

func TestHTTPProbeRequest(t *testing.T) {
	rec := &recorder{}
	srv := newHTTPServer(t, rec)
	host, port := hostPort(t, srv.Listener.Addr().String())
	m := newTestManager(t, nil)

	tests := []struct {
		name    string
		scheme  corev1.URIScheme
		host    string
		path    string
		headers []corev1.HTTPHeader
		check   func(t *testing.T, r *http.Request)
	}{
		{name: "defaults", path: "/healthz", check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, http.MethodGet, r.Method)
			assert.Equal(t, "/healthz", r.URL.Path)
			assert.Equal(t, "kube-probe/1.33", r.Header.Get("User-Agent"))
			assert.Equal(t, "*/*", r.Header.Get("Accept"))
			assert.Equal(t, srv.Listener.Addr().String(), r.Host)
			assert.Empty(t, r.Header.Get("Accept-Encoding"), "no transparent compression")
			assert.True(t, r.Close, "no keep-alive")
		}},
		{name: "empty path", path: "", check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, "/", r.URL.Path)
		}},
		{name: "query kept", path: "/ready?full=1&x=y", check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, "/ready", r.URL.Path)
			assert.Equal(t, "full=1&x=y", r.URL.RawQuery)
		}},
		{name: "headers, Host and overrides", path: "/", headers: []corev1.HTTPHeader{
			{Name: "X-Custom", Value: "a"}, {Name: "x-custom", Value: "b"},
			{Name: "Host", Value: "svc.example"}, {Name: "User-Agent", Value: "mine/1"}, {Name: "Accept", Value: "application/json"},
		}, check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, []string{"a", "b"}, r.Header.Values("X-Custom"))
			assert.Equal(t, "svc.example", r.Host)
			assert.Equal(t, "mine/1", r.Header.Get("User-Agent"))
			assert.Equal(t, "application/json", r.Header.Get("Accept"))
		}},
		{name: "empty Accept removed", path: "/", headers: []corev1.HTTPHeader{{Name: "Accept", Value: ""}}, check: func(t *testing.T, r *http.Request) {
			assert.NotContains(t, r.Header, "Accept")
		}},
		{name: "explicit host wins over pod IP", host: "127.0.0.1", path: "/h", check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, "/h", r.URL.Path)
		}},
		{name: "scheme is case-insensitive", scheme: "HTTP", path: "/s", check: func(t *testing.T, r *http.Request) {
			assert.Equal(t, "/s", r.URL.Path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := httpProbe(tt.path, intstr.FromInt(port))
			p.HTTPGet.Scheme, p.HTTPGet.Host, p.HTTPGet.HTTPHeaders = tt.scheme, tt.host, tt.headers
			podIP := host
			if tt.host != "" {
				podIP = "192.0.2.1" // must not be used
			}
			o := runOnce(t, m, Readiness, p, nil, podIP)
			require.Equal(t, Success, o.result, o.message)
			tt.check(t, rec.last())
		})
	}
}

func TestHTTPSProbeSkipsVerification(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	host, port := hostPort(t, srv.Listener.Addr().String())
	m := newTestManager(t, nil)
	p := httpProbe("/", intstr.FromInt(port))
	p.HTTPGet.Scheme = corev1.URISchemeHTTPS
	o := runOnce(t, m, Liveness, p, nil, host)
	assert.Equal(t, Success, o.result, o.message)
}

func TestHTTPProbeBodyIsLimited(t *testing.T) {
	srv := newHTTPServer(t, &recorder{})
	host, port := hostPort(t, srv.Listener.Addr().String())
	m := newTestManager(t, nil)
	u, err := probeURL(&corev1.HTTPGetAction{Path: "/big", Port: intstr.FromInt(port)}, &corev1.Container{}, host)
	require.NoError(t, err)
	v, body, err := m.httpProbe(t.Context(), u, nil, defaultTimeout)
	require.NoError(t, err)
	assert.Equal(t, vSuccess, v)
	assert.Len(t, body, maxOutput)
}

func TestHTTPProbeTimeout(t *testing.T) {
	// The handler answers only when the probe gave up: one real second,
	// the smallest timeoutSeconds.
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(done)
	}))
	t.Cleanup(srv.Close)
	host, port := hostPort(t, srv.Listener.Addr().String())
	m := newTestManager(t, nil)
	o := runOnce(t, m, Readiness, httpProbe("/", intstr.FromInt(port)), nil, host)
	<-done
	assert.Equal(t, Failure, o.result)
	assert.NoError(t, o.err)
	assert.Equal(t, fmt.Sprintf(`Readiness probe failed: Get "http://%s/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, srv.Listener.Addr()), o.message)
}
