package prober

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/sandbox"
)

// Execer runs a command in a running container; the sandbox runtime's
// ExecSync (see sandbox.Execer) satisfies it. A command that runs and
// fails returns its exit code with a nil error; a timeout returns an error
// wrapping context.DeadlineExceeded.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*sandbox.ExecResult, error)
}

var _ Execer = sandbox.Execer(nil)

// Kind is the kind of a probe.
type Kind uint8

// Probe kinds.
const (
	Liveness Kind = iota
	Readiness
	Startup
	numKinds
)

// String returns the kind as Kubernetes writes it in messages.
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Result is a probe's outcome, or a container's thresholded state for one
// kind of probe.
type Result uint8

// Results.
const (
	// Unknown: not probed yet (the initial startup state).
	Unknown Result = iota
	Success
	Failure
)

// String returns "Unknown", "Success" or "Failure".
func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Event reasons an Update asks the kubelet to record (Warning events on the
// pod, with the container as field path), as Kubernetes' kubelet does.
const (
	EventUnhealthy    = "Unhealthy"
	EventProbeWarning = "ProbeWarning"
)

// Update reports one probe attempt worth telling the kubelet about: one that
// needs an event, or one that changed the container's state.
type Update struct {
	PodUID        types.UID
	ContainerName string
	ContainerID   string
	Probe         Kind
	// Result is the container's thresholded state for this kind of probe
	// after the attempt.
	Result Result
	// Changed says Result differs from the state before the attempt: the
	// kubelet acts on it (liveness or startup Failure: kill and restart
	// the container; readiness: regenerate the pod status).
	Changed bool
	// Event is the reason of the event to record ("" for none):
	// EventUnhealthy for a failed or errored attempt (also below the
	// failure threshold, as Kubernetes records every one), EventProbeWarning
	// for a success with a warning.
	Event string
	// Message is the event's message, e.g. "Liveness probe failed: HTTP
	// probe failed with statuscode: 500".
	Message string
}

// Sentinel errors.
var (
	// ErrNoExecer: an exec probe with no Execer configured.
	ErrNoExecer = errors.New("no exec runner configured")
	// ErrNoHandler: a probe with none of exec, httpGet, tcpSocket, grpc.
	ErrNoHandler = errors.New("missing probe handler")
)

// Defaults Kubernetes' API defaulting applies to probes; a zero field of an
// undefaulted pod gets these.
const (
	DefaultPeriodSeconds    = 10
	DefaultTimeoutSeconds   = 1
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
)

// DefaultUserAgent is the User-Agent of HTTP and gRPC probes.
const DefaultUserAgent = "kube-probe/1.33"

// maxProbeRetries is how many times an errored probe is retried before its
// result is thrown away.
const maxProbeRetries = 3

// maxOutput caps the body of an HTTP response and the output of an exec
// probe kept for the message (Kubernetes' 10 KiB).
const maxOutput = 10 << 10
