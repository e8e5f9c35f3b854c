package admission

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultTolerationSecondsName names the DefaultTolerationSeconds plugin.
const DefaultTolerationSecondsName = "DefaultTolerationSeconds"

// DefaultTolerationSeconds is Kubernetes' plugin of the same name: a pod
// that does not already tolerate the node.kubernetes.io/not-ready and
// node.kubernetes.io/unreachable NoExecute taints gets tolerations for them
// limited to 300 seconds (configurable), so its pods are evicted five
// minutes after their node goes away.
type DefaultTolerationSeconds struct {
	notReady, unreachable int64
}

var (
	_ Admitter = (*DefaultTolerationSeconds)(nil)
	_ Handler  = (*DefaultTolerationSeconds)(nil)
	_ Namer    = (*DefaultTolerationSeconds)(nil)
)

// DefaultTolerationSecondsConfig configures NewDefaultTolerationSeconds.
type DefaultTolerationSecondsConfig struct {
	// NotReadySeconds and UnreachableSeconds bound the tolerations; zero
	// means Kubernetes' default of 300.
	NotReadySeconds, UnreachableSeconds int64
}

// NewDefaultTolerationSeconds returns the DefaultTolerationSeconds plugin.
func NewDefaultTolerationSeconds(cfg DefaultTolerationSecondsConfig) (*DefaultTolerationSeconds, error) {
	if cfg.NotReadySeconds < 0 || cfg.UnreachableSeconds < 0 {
		return nil, errors.New("admission: DefaultTolerationSeconds needs non-negative durations")
	}
	d := &DefaultTolerationSeconds{notReady: cfg.NotReadySeconds, unreachable: cfg.UnreachableSeconds}
	if d.notReady == 0 {
		d.notReady = 300
	}
	if d.unreachable == 0 {
		d.unreachable = 300
	}
	return d, nil
}

// Name implements Namer.
func (*DefaultTolerationSeconds) Name() string { return DefaultTolerationSecondsName }

// Handles implements Handler: create and update.
func (*DefaultTolerationSeconds) Handles(op Operation) bool { return op == Create || op == Update }

// Admit adds the missing tolerations to a pod.
func (d *DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != podsGR {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest("resource was marked with kind Pod but was unable to be converted")
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		notReady = notReady || toleratesNoExecute(t, corev1.TaintNodeNotReady)
		unreachable = unreachable || toleratesNoExecute(t, corev1.TaintNodeUnreachable)
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(d.notReady),
		})
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(d.unreachable),
		})
	}
	return nil
}

// toleratesNoExecute reports whether t already covers the NoExecute taint
// key (an empty key or effect is a wildcard).
func toleratesNoExecute(t corev1.Toleration, key string) bool {
	return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
}
