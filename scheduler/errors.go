package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Sentinel errors. Filter and PreFilter plugins reject a pod by returning an
// error that wraps ErrUnschedulable (preemption or a cluster change may
// help) or ErrUnresolvable (only a change of the node itself may help).
// ErrUnresolvable wraps ErrUnschedulable, so errors.Is(err,
// ErrUnschedulable) is true for every rejection.
var (
	ErrUnschedulable = errors.New("unschedulable")
	ErrUnresolvable  = fmt.Errorf("%w and unresolvable", ErrUnschedulable)
	// ErrSkip returned by PreFilter (PreScore) means the plugin's Filter
	// (Score) has nothing to do for this pod and is not called.
	ErrSkip = errors.New("skip")
	// ErrNoNodesAvailable is the scheduling error when the cluster has no node.
	ErrNoNodesAvailable = errors.New("no nodes available to schedule pods")
	// ErrQueueClosed is returned by Queue.Pop after Close.
	ErrQueueClosed = errors.New("scheduling queue is closed")
	// ErrStateNotFound is returned by CycleState.Read for a missing key.
	ErrStateNotFound = errors.New("state not found in cycle state")
	// ErrNotFound is returned for a node or pod unknown to the cache or snapshot.
	ErrNotFound = errors.New("not found")
	// ErrProfile reports an invalid profile or configuration.
	ErrProfile = errors.New("invalid scheduler profile")
)

// StatusError is a plugin rejection carrying the reasons that make up the
// FailedScheduling message. Create it with Unschedulable or Unresolvable.
type StatusError struct {
	// Code is ErrUnschedulable or ErrUnresolvable.
	Code error
	// Reasons are short human-readable reasons, e.g. "Insufficient cpu".
	Reasons []string
	// Plugin is the name of the rejecting plugin, filled by the framework.
	Plugin string
}

// Unschedulable returns a rejection that a cluster change (for example a
// deleted pod) may resolve.
func Unschedulable(reasons ...string) *StatusError {
	return &StatusError{Code: ErrUnschedulable, Reasons: reasons}
}

// Unresolvable returns a rejection that only a change of the node may
// resolve (labels, taints, allocatable).
func Unresolvable(reasons ...string) *StatusError {
	return &StatusError{Code: ErrUnresolvable, Reasons: reasons}
}

func (e *StatusError) Error() string { return strings.Join(e.Reasons, ", ") }

// Unwrap returns the code, so errors.Is works with the sentinels.
func (e *StatusError) Unwrap() error { return e.Code }

// Reasons returns the reasons of a rejection: a StatusError's own, else the
// error text without the sentinel suffix (so fmt.Errorf("too hot: %w",
// ErrUnschedulable) reads "too hot").
func Reasons(err error) []string {
	if err == nil {
		return nil
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Reasons
	}
	msg := err.Error()
	for _, s := range []error{ErrUnresolvable, ErrUnschedulable} {
		msg = strings.TrimSuffix(msg, ": "+s.Error())
	}
	return []string{msg}
}

// pluginOf returns the plugin recorded in a rejection.
func pluginOf(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Plugin
	}
	return ""
}

// withPlugin records plugin on a rejection, wrapping foreign errors.
func withPlugin(err error, plugin string) error {
	var se *StatusError
	if errors.As(err, &se) {
		if se.Plugin == plugin {
			return err
		}
		// A copy: plugins may return shared values from several goroutines.
		return &StatusError{Code: se.Code, Reasons: se.Reasons, Plugin: plugin}
	}
	code := ErrUnschedulable
	if errors.Is(err, ErrUnresolvable) {
		code = ErrUnresolvable
	}
	return &StatusError{Code: code, Reasons: Reasons(err), Plugin: plugin}
}

// Diagnosis records why a pod fits no node.
type Diagnosis struct {
	// NodeToStatus maps each rejected node to its rejection.
	NodeToStatus map[string]error
	// UnschedulablePlugins names the plugins that rejected the pod on at
	// least one node (or in PreFilter).
	UnschedulablePlugins map[string]bool
	// PreFilterMsg is set when a PreFilter plugin rejected the pod outright.
	PreFilterMsg string
}

// FitError is the scheduling error of a pod that fits no node. Its message
// has Kubernetes' format.
type FitError struct {
	Pod         *corev1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error returns "0/N nodes are available: <counts of reasons>." with the
// reasons sorted, as kube-scheduler prints them.
func (f *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		return msg + " " + f.Diagnosis.PreFilterMsg + "."
	}
	counts := map[string]int{}
	for _, err := range f.Diagnosis.NodeToStatus {
		for _, r := range Reasons(err) {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	if len(parts) > 0 {
		msg += " " + strings.Join(parts, ", ") + "."
	}
	return msg
}

// Unwrap makes errors.Is(fitErr, ErrUnschedulable) true.
func (f *FitError) Unwrap() error { return ErrUnschedulable }
