package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/sandbox/crilog"
)

// LogSource finds container log files on this node.
type LogSource interface {
	// LogFile returns the CRI log file of the instance of container that
	// a log request means — the running instance, else the last
	// terminated one; with previous the instance before the current one
	// (LogContainerID states the kubelet's rules) — and a channel closed
	// once that instance has exited and its output is completely written.
	// A closed channel means the instance is not running; nil means the
	// source cannot tell (a follow then lasts until the client leaves). A
	// source that watches for the exit stops when ctx is done.
	//
	// Errors wrapping ErrPodNotFound or ErrContainerNotFound answer 404;
	// any other error answers 400 with its text, which should be
	// Kubernetes' (`container "app" in pod "web" is waiting to start:
	// ContainerCreating`).
	LogFile(ctx context.Context, namespace, pod, container string, previous bool) (path string, exited <-chan struct{}, err error)
}

// LogSourceFunc adapts a function to LogSource.
type LogSourceFunc func(ctx context.Context, namespace, pod, container string, previous bool) (string, <-chan struct{}, error)

// LogFile calls f.
func (f LogSourceFunc) LogFile(ctx context.Context, namespace, pod, container string, previous bool) (string, <-chan struct{}, error) {
	return f(ctx, namespace, pod, container, previous)
}

var _ LogSource = LogSourceFunc(nil)

// Sentinels a LogSource wraps for a 404.
var (
	ErrPodNotFound       = errors.New("pod not found")
	ErrContainerNotFound = errors.New("container not found")
)

// PodNotFound is the kubelet's `pod "web" does not exist`, wrapping
// ErrPodNotFound.
func PodNotFound(pod string) error {
	return &notFound{msg: fmt.Sprintf("pod %q does not exist", pod), is: ErrPodNotFound}
}

// ContainerNotFound is the kubelet's `container "db" not found in pod
// "web"`, wrapping ErrContainerNotFound.
func ContainerNotFound(pod, container string) error {
	return &notFound{msg: fmt.Sprintf("container %q not found in pod %q", container, pod), is: ErrContainerNotFound}
}

// notFound carries Kubernetes' exact text and a sentinel.
type notFound struct {
	msg string
	is  error
}

func (e *notFound) Error() string { return e.msg }
func (e *notFound) Unwrap() error { return e.is }

// serveContainerLogs serves GET /containerLogs/{namespace}/{pod}/{container}.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	parts := splitPath(r.URL.Path, "/containerLogs/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	namespace, podName, containerName := parts[0], parts[1], parts[2]
	switch {
	case podName == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing podID."}`)
		return
	case containerName == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing container name."}`)
		return
	case namespace == "":
		writeError(w, http.StatusBadRequest, `{"message": "Missing podNamespace."}`)
		return
	}
	opts, err := ParseLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, `{"message": "Unable to decode query."}`)
		return
	}
	if err := ValidateLogOptions(opts); err != nil {
		writeError(w, http.StatusUnprocessableEntity, `{"message": "Invalid request."}`)
		return
	}
	if s.canLookUp() {
		pod, ok := s.pod(namespace, podName)
		if !ok {
			writeError(w, http.StatusNotFound, PodNotFound(podName).Error())
			return
		}
		if !hasContainer(pod, containerName) {
			writeError(w, http.StatusNotFound, ContainerNotFound(podName, containerName).Error())
			return
		}
	}
	if s.cfg.Logs == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %q in pod %q: no log source on this node", containerName, podName))
		return
	}
	ctx := r.Context()
	path, exited, err := s.cfg.Logs.LogFile(ctx, namespace, podName, containerName, opts.Previous)
	switch {
	case errors.Is(err, ErrPodNotFound), errors.Is(err, ErrContainerNotFound):
		writeError(w, http.StatusNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// Open errors are still the client's answer; once the header is out
	// they can only end the stream.
	if _, err := os.Stat(path); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("failed to open log file %q: %v", path, err))
		return
	}
	ro := s.readOptions(opts, exited)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	var out io.Writer
	var finish func()
	if opts.Follow {
		fw := newFlushWriter(w)
		out, finish = fw, fw.stop
	} else {
		bw := bufio.NewWriterSize(w, 32<<10)
		out, finish = bw, func() { _ = bw.Flush() }
	}
	err = crilog.ReadLogs(ctx, path, ro, out, out)
	finish()
	if err != nil && ctx.Err() == nil {
		s.log.Warn("container log stream ended with an error", "pod", namespace+"/"+podName, "container", containerName, "path", path, "err", err)
	}
}

// readOptions maps PodLogOptions onto crilog's reader.
func (s *Server) readOptions(o *corev1.PodLogOptions, exited <-chan struct{}) crilog.ReadOptions {
	ro := crilog.ReadOptions{
		Follow:       o.Follow,
		TailLines:    -1,
		Timestamps:   o.Timestamps,
		Done:         exited,
		PollInterval: s.cfg.PollInterval,
		Logger:       s.log,
	}
	if o.TailLines != nil {
		ro.TailLines = *o.TailLines
	}
	if o.LimitBytes != nil {
		ro.LimitBytes = *o.LimitBytes
	}
	switch {
	case o.SinceSeconds != nil:
		ro.Since = s.cfg.Clock.Now().Add(-time.Duration(*o.SinceSeconds) * time.Second)
	case o.SinceTime != nil:
		ro.Since = o.SinceTime.Time
	}
	if o.Stream != nil {
		switch *o.Stream {
		case corev1.LogStreamStdout:
			ro.Stream = crilog.Stdout
		case corev1.LogStreamStderr:
			ro.Stream = crilog.Stderr
		}
	}
	return ro
}

// ParseLogOptions decodes PodLogOptions from query parameters the way the
// kubelet's parameter codec does: booleans are true unless absent, "0" or
// "false"; integers are decimal; sinceTime is RFC 3339. The legacy "tail"
// parameter stands for tailLines ("all": every line).
func ParseLogOptions(q url.Values) (*corev1.PodLogOptions, error) {
	if tail := q.Get("tail"); tail != "" {
		q = cloneValues(q)
		q.Set("tailLines", tail)
		if tail == "all" {
			q.Del("tailLines")
		}
	}
	o := &corev1.PodLogOptions{Container: q.Get("container")}
	for name, dst := range map[string]*bool{"follow": &o.Follow, "previous": &o.Previous, "timestamps": &o.Timestamps,
		"insecureSkipTLSVerifyBackend": &o.InsecureSkipTLSVerifyBackend} {
		v := q[name]
		if err := runtime.Convert_Slice_string_To_bool(&v, dst, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for name, dst := range map[string]**int64{"sinceSeconds": &o.SinceSeconds, "tailLines": &o.TailLines, "limitBytes": &o.LimitBytes} {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			continue
		}
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		*dst = &n
	}
	if v := q.Get("sinceTime"); v != "" {
		var t metav1.Time
		if err := t.UnmarshalQueryParameter(v); err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = &t
	}
	if v, ok := q["stream"]; ok && len(v) > 0 {
		o.Stream = &v[0]
	}
	return o, nil
}

func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q))
	for k, v := range q {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// ErrInvalidLogOptions is wrapped by ValidateLogOptions' errors.
var ErrInvalidLogOptions = errors.New("invalid pod log options")

// ValidateLogOptions checks PodLogOptions as Kubernetes'
// ValidatePodLogOptions does: tailLines >= 0, limitBytes and sinceSeconds
// > 0, at most one of sinceSeconds and sinceTime, and stream All, Stdout
// or Stderr.
func ValidateLogOptions(o *corev1.PodLogOptions) error {
	var msg string
	switch {
	case o.TailLines != nil && *o.TailLines < 0:
		msg = fmt.Sprintf("tailLines: Invalid value: %d: must be greater than or equal to 0", *o.TailLines)
	case o.LimitBytes != nil && *o.LimitBytes < 1:
		msg = fmt.Sprintf("limitBytes: Invalid value: %d: must be greater than 0", *o.LimitBytes)
	case o.SinceSeconds != nil && o.SinceTime != nil:
		msg = "at most one of `sinceTime` or `sinceSeconds` may be specified"
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		msg = fmt.Sprintf("sinceSeconds: Invalid value: %d: must be greater than 0", *o.SinceSeconds)
	case o.Stream != nil && *o.Stream != corev1.LogStreamAll && *o.Stream != corev1.LogStreamStdout && *o.Stream != corev1.LogStreamStderr:
		msg = fmt.Sprintf("stream: Unsupported value: %q", *o.Stream)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidLogOptions, msg)
}
