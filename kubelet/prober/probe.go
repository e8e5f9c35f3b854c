package prober

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// verdict is what one handler run observed, as pkg/probe's Result.
type verdict uint8

const (
	vSuccess verdict = iota
	vWarning
	vFailure
	vUnknown
)

// target is what a probe needs to know about the container it probes.
type target struct {
	container   *corev1.Container
	containerID string
	podIP       string
}

// outcome is one probe attempt as the worker sees it: the result to count,
// or err when the attempt errored and must be thrown away, and the event to
// record.
type outcome struct {
	result  Result
	err     error
	event   string
	message string
}

// probe runs spec once (with retries on errors) and turns the verdict into
// an outcome with Kubernetes' event messages.
func (m *Manager) probe(ctx context.Context, kind Kind, spec *corev1.Probe, t target) outcome {
	v, output, err := m.runWithRetries(ctx, spec, t)
	if err != nil {
		return outcome{
			result:  Failure,
			err:     err,
			event:   EventUnhealthy,
			message: fmt.Sprintf("%s probe errored and resulted in unknown state: %s", kind, err),
		}
	}
	switch v {
	case vSuccess:
		return outcome{result: Success}
	case vWarning:
		return outcome{result: Success, event: EventProbeWarning, message: fmt.Sprintf("%s probe warning: %s", kind, output)}
	default:
		return outcome{result: Failure, event: EventUnhealthy, message: fmt.Sprintf("%s probe failed: %s", kind, output)}
	}
}

func (m *Manager) runWithRetries(ctx context.Context, spec *corev1.Probe, t target) (verdict, string, error) {
	var (
		v      verdict
		output string
		err    error
	)
	for range maxProbeRetries {
		v, output, err = m.run(ctx, spec, t)
		if err == nil || ctx.Err() != nil {
			return v, output, err
		}
	}
	return v, output, err
}

// run dispatches to the probe's handler. Errors mean the probe could not be
// run at all; a handler that ran and failed returns vFailure and a message.
func (m *Manager) run(ctx context.Context, spec *corev1.Probe, t target) (verdict, string, error) {
	timeout := time.Duration(spec.TimeoutSeconds) * time.Second
	switch {
	case spec.Exec != nil:
		return m.execProbe(ctx, t, spec.Exec.Command, timeout)
	case spec.HTTPGet != nil:
		u, err := probeURL(spec.HTTPGet, t.container, t.podIP)
		if err != nil {
			return vUnknown, "", err
		}
		return m.httpProbe(ctx, u, spec.HTTPGet.HTTPHeaders, timeout)
	case spec.TCPSocket != nil:
		port, err := resolvePort(spec.TCPSocket.Port, t.container)
		if err != nil {
			return vUnknown, "", err
		}
		host := spec.TCPSocket.Host
		if host == "" {
			host = t.podIP
		}
		return m.tcpProbe(ctx, host, port, timeout)
	case spec.GRPC != nil:
		service := ""
		if spec.GRPC.Service != nil {
			service = *spec.GRPC.Service
		}
		return m.grpcProbe(ctx, t.podIP, int(spec.GRPC.Port), service, timeout)
	}
	return vUnknown, "", fmt.Errorf("container %q: %w", t.container.Name, ErrNoHandler)
}

// resolvePort finds the port of an httpGet or tcpSocket action: a number,
// the name of one of the container's ports, or a number written as a
// string. The errors are Kubernetes' (users see them in events).
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		found := false
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port, found = int(cp.ContainerPort), true
				break
			}
		}
		if !found {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return -1, err
			}
			port = n
		}
	default:
		return -1, fmt.Errorf("intOrString had no kind: %+v", p)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

// defaulted returns a copy of p with Kubernetes' defaults for zero fields.
func defaulted(p *corev1.Probe) *corev1.Probe {
	c := p.DeepCopy()
	if c.PeriodSeconds <= 0 {
		c.PeriodSeconds = DefaultPeriodSeconds
	}
	if c.TimeoutSeconds <= 0 {
		c.TimeoutSeconds = DefaultTimeoutSeconds
	}
	if c.SuccessThreshold <= 0 {
		c.SuccessThreshold = DefaultSuccessThreshold
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = DefaultFailureThreshold
	}
	if c.InitialDelaySeconds < 0 {
		c.InitialDelaySeconds = 0
	}
	return c
}

// isTimeout says err is a deadline, from the runtime or the context.
func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}
