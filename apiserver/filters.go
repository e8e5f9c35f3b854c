package apiserver

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusRecorder remembers the response code and whether headers went out.
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets watches stream through the recorder.
func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withRecovery turns a panic in any handler into a logged 500 Status; no
// panic reaches the client's connection.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == nil || p == http.ErrAbortHandler {
				if p != nil {
					panic(p)
				}
				return
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !rec.wroteHeader {
				s.writeError(rec, r, apierrors.NewInternalError(fmt.Errorf("the server panicked serving the request: %v", p)))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// isLongRunning reports watches and pod logs, which do not count against
// in-flight limits.
func isLongRunning(r *http.Request) bool {
	if r.Method != http.MethodGet {
		return false
	}
	w := r.URL.Query().Get("watch")
	return w == "1" || w == "true" || isPodLogPath(r.URL.Path)
}

// withInflightLimit bounds concurrent requests like kube-apiserver's
// max-requests-inflight: beyond the limit a request gets 429 with
// Retry-After instead of queueing without bound.
func (s *Server) withInflightLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLongRunning(r) || !strings.HasPrefix(r.URL.Path, "/api") {
			next.ServeHTTP(w, r)
			return
		}
		kind, sem := "readOnly", s.readOnly
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			kind, sem = "mutating", s.mutating
		}
		if sem == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case sem <- struct{}{}:
		default:
			s.metrics.rejected.WithLabelValues(kind).Inc()
			s.writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
				Message: "Too many requests, please try again later.",
				Details: &metav1.StatusDetails{RetryAfterSeconds: 1},
			}})
			return
		}
		g := s.metrics.inflight.WithLabelValues(kind)
		g.Inc()
		defer func() { <-sem; g.Dec() }()
		next.ServeHTTP(w, r)
	})
}

// withBodyLimit caps request bodies; readBody turns the overflow into 413.
func (s *Server) withBodyLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}
