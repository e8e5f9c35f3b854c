package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbesAndLifecycle validates the probes and hooks of a regular or
// sidecar container.
func (cc containerContext) validateProbesAndLifecycle(c *corev1.Container, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, validateLifecycle(c.Lifecycle, cc.grace, p.Child("lifecycle"))...)
	}
	if c.LivenessProbe != nil {
		errs = append(errs, validateProbe(c.LivenessProbe, cc.grace, p.Child("livenessProbe"))...)
		errs = append(errs, successThresholdMustBeOne(c.LivenessProbe, p.Child("livenessProbe"))...)
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, validateProbe(c.ReadinessProbe, cc.grace, p.Child("readinessProbe"))...)
		if c.ReadinessProbe.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), c.ReadinessProbe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if c.StartupProbe != nil {
		errs = append(errs, validateProbe(c.StartupProbe, cc.grace, p.Child("startupProbe"))...)
		errs = append(errs, successThresholdMustBeOne(c.StartupProbe, p.Child("startupProbe"))...)
	}
	return errs
}

func successThresholdMustBeOne(probe *corev1.Probe, p *field.Path) field.ErrorList {
	if probe.SuccessThreshold != 1 {
		return field.ErrorList{field.Invalid(p.Child("successThreshold"), probe.SuccessThreshold, "must be 1")}
	}
	return nil
}

func validateProbe(probe *corev1.Probe, grace *int64, p *field.Path) field.ErrorList {
	h := probe.ProbeHandler
	errs := validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, grpc: h.GRPC}, grace, p)
	errs = append(errs, validateNonnegative(int64(probe.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	// Defaulting turns 0 into 1 (timeout, success), 10 (period) or 3
	// (failure); Kubernetes only rejects negatives, which keep its message.
	errs = append(errs, validateAtLeastOne(probe.TimeoutSeconds, p.Child("timeoutSeconds"))...)
	errs = append(errs, validateAtLeastOne(probe.PeriodSeconds, p.Child("periodSeconds"))...)
	errs = append(errs, validateAtLeastOne(probe.SuccessThreshold, p.Child("successThreshold"))...)
	errs = append(errs, validateAtLeastOne(probe.FailureThreshold, p.Child("failureThreshold"))...)
	if probe.TerminationGracePeriodSeconds != nil && *probe.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *probe.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return errs
}

func validateAtLeastOne(value int32, p *field.Path) field.ErrorList {
	switch {
	case value < 0:
		return validateNonnegative(int64(value), p)
	case value == 0:
		return field.ErrorList{field.Invalid(p, value, "must be greater than or equal to 1")}
	}
	return nil
}

// handler is the union of probe and lifecycle hook actions.
type handler struct {
	exec      *corev1.ExecAction
	httpGet   *corev1.HTTPGetAction
	tcpSocket *corev1.TCPSocketAction
	grpc      *corev1.GRPCAction
	sleep     *corev1.SleepAction
}

// validateHandler requires exactly one action and validates it.
func validateHandler(h handler, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	one := func(name string, set bool, check func() field.ErrorList) {
		if !set {
			return
		}
		if n++; n > 1 {
			errs = append(errs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		errs = append(errs, check()...)
	}
	one("exec", h.exec != nil, func() field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("exec", "command"), "")}
		}
		return nil
	})
	one("httpGet", h.httpGet != nil, func() field.ErrorList { return validateHTTPGet(h.httpGet, p.Child("httpGet")) })
	one("tcpSocket", h.tcpSocket != nil, func() field.ErrorList {
		return validatePortNumOrName(h.tcpSocket.Port, p.Child("tcpSocket", "port"))
	})
	one("grpc", h.grpc != nil, func() field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("grpc", "port"))
	})
	one("sleep", h.sleep != nil, func() field.ErrorList {
		if grace != nil && (h.sleep.Seconds < 0 || h.sleep.Seconds > *grace) {
			return field.ErrorList{field.Invalid(p.Child("sleep"), h.sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(p, "must specify a handler type"))
	}
	return errs
}

func validateHTTPGet(h *corev1.HTTPGetAction, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, p.Child("port"))...)
	if h.Scheme != corev1.URISchemeHTTP && h.Scheme != corev1.URISchemeHTTPS {
		errs = append(errs, field.NotSupported(p.Child("scheme"), h.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
	}
	for _, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(p.Child("httpHeaders"), hdr.Name, msg))
		}
	}
	return errs
}

// validatePortNumOrName: a port number 1-65535 or an IANA_SVC_NAME.
func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.IntVal)) {
			errs = append(errs, field.Invalid(p, port.IntVal, msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(p, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(p, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.PostStart != nil {
		h := l.PostStart
		errs = append(errs, validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, grace, p.Child("postStart"))...)
	}
	if l.PreStop != nil {
		h := l.PreStop
		errs = append(errs, validateHandler(handler{exec: h.Exec, httpGet: h.HTTPGet, tcpSocket: h.TCPSocket, sleep: h.Sleep}, grace, p.Child("preStop"))...)
	}
	return errs
}
