package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/apiserver/auth"
)

// Config holds the server's collaborators. All are optional: a server
// without Pods lists no pods, one without Logs answers every log request
// with 404, one without a Gatherer serves no /metrics.
type Config struct {
	// Pods returns the pods bound to this node (GET /pods).
	Pods func() []*corev1.Pod
	// Pod finds one pod by namespace and name; nil searches Pods. When
	// either is set the server answers an unknown pod or container with
	// the kubelet's 404 itself before asking Logs.
	Pod func(namespace, name string) (*corev1.Pod, bool)
	// Logs finds container log files.
	Logs LogSource
	// Gatherer serves /metrics.
	Gatherer prometheus.Gatherer
	// Healthz reports the kubelet's health at /healthz; nil is healthy.
	Healthz func() error
	// Clock turns sinceSeconds into a time; defaults to the real clock.
	Clock clock.PassiveClock
	// PollInterval is how often a follower looks for new output (0:
	// crilog.DefaultPollInterval).
	PollInterval time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// Authenticator, when set, must recognise every caller (401
	// otherwise); DelegatedAuthenticator accepts the cluster's client
	// certificates and the bearer tokens the API server vouches for. Nil
	// serves everyone: tests and embedding.
	Authenticator auth.Authenticator
	// Authorizer, when set with Authenticator, must allow the caller the
	// node's subresource the request maps to (RequestAttributes; 403
	// otherwise); DelegatedAuthorizer asks the API server.
	Authorizer auth.Authorizer
	// NodeName names the node in authorization requests.
	NodeName string
}

// Server is the kubelet's HTTP handler.
type Server struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// New builds the handler.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	s.mux.HandleFunc("/pods", s.servePods)
	s.mux.HandleFunc("/pods/", s.servePods)
	s.mux.HandleFunc("/healthz", s.serveHealthz)
	if cfg.Gatherer != nil {
		s.mux.Handle("/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return s
}

// ServeHTTP serves the kubelet's endpoints. Log paths bypass the mux, whose
// path cleaning would turn an empty segment into a redirect instead of the
// kubelet's "Missing podID." answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, ok := s.withAuth(w, r)
	if !ok {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/containerLogs/") {
		s.serveContainerLogs(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// getOnly rejects methods other than GET and HEAD with 405 and an Allow
// header, like the kubelet's GETOnlyRestfulFilter.
func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET")
	writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	return false
}

// writeError writes a plain-text error, as go-restful's WriteError does
// for the kubelet.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	if s.cfg.Healthz != nil {
		if err := s.cfg.Healthz(); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("[-]kubelet failed: %v\nhealthz check failed\n", err))
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("ok"))
}

// servePods writes the node's pods as a v1 PodList.
func (s *Server) servePods(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/pods" && r.URL.Path != "/pods/" {
		http.NotFound(w, r)
		return
	}
	if !getOnly(w, r) {
		return
	}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{}}
	if s.cfg.Pods != nil {
		for _, p := range s.cfg.Pods() {
			list.Items = append(list.Items, *p)
		}
	}
	data, err := json.Marshal(list)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// canLookUp reports whether the server knows the node's pods, to answer
// unknown pods and containers itself before asking the LogSource.
func (s *Server) canLookUp() bool { return s.cfg.Pod != nil || s.cfg.Pods != nil }

// pod finds a pod by namespace and name.
func (s *Server) pod(namespace, name string) (*corev1.Pod, bool) {
	if s.cfg.Pod != nil {
		return s.cfg.Pod(namespace, name)
	}
	if s.cfg.Pods == nil {
		return nil, false
	}
	for _, p := range s.cfg.Pods() {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// ListenAndServe serves h on addr (host:port) over plain HTTP until ctx is
// done, then shuts down gracefully; it returns nil after a shutdown caused
// by ctx.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("kubelet server: listen on %s: %w", addr, err)
	}
	return Serve(ctx, l, h)
}

// Serve is ListenAndServe on an existing listener, which it closes.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("kubelet server on %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	// Request contexts derive from ctx, so followers are already ending.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kubelet server on %s: shutdown: %w", l.Addr(), err)
	}
	<-errc
	return nil
}

// splitPath splits /prefix/a/b/c into its segments after prefix.
func splitPath(path, prefix string) []string {
	rest := strings.TrimPrefix(path, prefix)
	if rest == "" {
		return nil
	}
	return strings.Split(rest, "/")
}
