package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podkit/podkit/kubelet/status"
	"github.com/podkit/podkit/sandbox"
)

// DefaultExitPollInterval is how often a LogSource of this package asks
// whether a followed container still runs.
const DefaultExitPollInterval = time.Second

// StatusLogs is a LogSource built from the kubelet's pod statuses and any
// sandbox runtime: the instance is chosen from the pod's status with
// LogContainerID (Kubernetes' rules and messages), its file is the
// runtime's ContainerStatus.LogPath, and its exit is observed by asking
// ContainerStatus every Interval while a follower is attached (a runtime
// reports a container exited only once its output is written). One
// status call per second per `kubectl logs -f` is cheap next to an
// inotify instance each.
type StatusLogs struct {
	// Pod returns a pod of this node with the kubelet's freshest status
	// (the status manager's, not the API server's possibly older copy).
	Pod     func(namespace, name string) (*corev1.Pod, bool)
	Runtime sandbox.SandboxRunner
	// Interval defaults to DefaultExitPollInterval.
	Interval time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
}

var _ LogSource = (*StatusLogs)(nil)

// LogFile implements LogSource.
func (s *StatusLogs) LogFile(ctx context.Context, namespace, name, container string, previous bool) (string, <-chan struct{}, error) {
	pod, ok := s.Pod(namespace, name)
	if !ok {
		return "", nil, PodNotFound(name)
	}
	if !hasContainer(pod, container) {
		return "", nil, ContainerNotFound(name, container)
	}
	cid, err := LogContainerID(pod, container, previous)
	if err != nil {
		return "", nil, err
	}
	id := status.ParseContainerID(cid)
	st, err := s.Runtime.ContainerStatus(ctx, id)
	if errors.Is(err, sandbox.ErrNotFound) {
		return "", nil, fmt.Errorf("container %q in pod %q: container %s no longer exists on this node", container, name, id)
	}
	if err != nil {
		return "", nil, fmt.Errorf("container %q in pod %q: status of container %s: %w", container, name, id, err)
	}
	if st.LogPath == "" {
		return "", nil, fmt.Errorf("container %q in pod %q: container %s has no log file", container, name, id)
	}
	exited := make(chan struct{})
	if st.State == sandbox.ContainerStateExited {
		close(exited)
		return st.LogPath, exited, nil
	}
	go poll(ctx, s.Clock, s.Interval, exited, func() bool {
		st, err := s.Runtime.ContainerStatus(ctx, id)
		return errors.Is(err, sandbox.ErrNotFound) || (err == nil && st.State == sandbox.ContainerStateExited)
	})
	return st.LogPath, exited, nil
}

// poll calls done every interval until it reports true, then closes
// exited; it gives up (leaving exited open) when ctx is done.
func poll(ctx context.Context, clk clock.Clock, interval time.Duration, exited chan<- struct{}, done func() bool) {
	if interval <= 0 {
		interval = DefaultExitPollInterval
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if done() {
			close(exited)
			return
		}
		t.Reset(interval)
	}
}

// LogFileFunc is a kubelet's own log file lookup: the file of the
// instance a request means and whether that instance still runs.
type LogFileFunc func(namespace, pod, container string, previous bool) (path string, running bool, err error)

// PollLogFile adapts a LogFileFunc to LogSource. The followed instance
// counts as exited once f reports it no longer running, names another
// file (it was replaced by a restart), or fails; f is asked every
// interval (0: DefaultExitPollInterval) on clk (nil: the real clock).
func PollLogFile(f LogFileFunc, interval time.Duration, clk clock.Clock) LogSource {
	return LogSourceFunc(func(ctx context.Context, namespace, pod, container string, previous bool) (string, <-chan struct{}, error) {
		path, running, err := f(namespace, pod, container, previous)
		if err != nil {
			return "", nil, err
		}
		exited := make(chan struct{})
		if !running {
			close(exited)
			return path, exited, nil
		}
		go poll(ctx, clk, interval, exited, func() bool {
			p, running, err := f(namespace, pod, container, false)
			return err != nil || !running || p != path
		})
		return path, exited, nil
	})
}
