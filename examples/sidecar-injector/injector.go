package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
)

// Annotations the injector reads and writes, in the spirit of Istio's
// sidecar.istio.io/inject and sidecar.istio.io/status.
const (
	InjectAnnotation = "sidecar.example.com/inject" // "true" asks for a sidecar
	StatusAnnotation = "sidecar.example.com/status" // "injected" once done
)

var podsResource = schema.GroupResource{Resource: "pods"}

// Injector is a mutating admission plugin that adds a proxy container to
// every new pod annotated sidecar.example.com/inject=true, the way Istio's
// injection webhook adds istio-proxy — except that it runs inside the API
// server as a plain Go value instead of behind an HTTPS webhook.
type Injector struct {
	// Sidecar is the container to add; its Name must not clash with the
	// pod's own containers.
	Sidecar corev1.Container
}

var (
	_ admission.Admitter = (*Injector)(nil)
	_ admission.Handler  = (*Injector)(nil)
	_ admission.Namer    = (*Injector)(nil)
)

// Name implements admission.Namer: it names the plugin in errors and in
// the apiserver_admission_controller_admission_duration_seconds metric.
func (*Injector) Name() string { return "SidecarInjector" }

// Handles implements admission.Handler: only pod creation is mutated, so
// the containers of a running pod never change under it.
func (*Injector) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit adds the sidecar. It is idempotent: a pod that already has a
// container of the sidecar's name is left as it is.
func (in *Injector) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != podsResource {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("resource was marked with kind Pod but was %T", a.Object))
	}
	if pod.Annotations[InjectAnnotation] != "true" {
		return nil
	}
	if in.Sidecar.Image == "" {
		return errors.New("no sidecar image configured")
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		if c.Name == in.Sidecar.Name {
			return nil
		}
	}
	pod.Spec.Containers = append(pod.Spec.Containers, *in.Sidecar.DeepCopy())
	pod.Annotations[StatusAnnotation] = "injected"
	return nil
}

// WithInjector returns an apiserver.Config hook (podkit.ClusterConfig's
// APIServer) that puts in into the server's admission chain: after the
// built-in mutating plugins, so it sees defaulted pods as a webhook would,
// and before a second pass of the Defaulter, so the injected container gets
// Kubernetes' defaults (imagePullPolicy, terminationMessagePath) before
// validation. Validation and the built-in validating plugins (quota last)
// run unchanged.
func WithInjector(in *Injector) func(*apiserver.Config) error {
	return func(cfg *apiserver.Config) error {
		if in == nil || in.Sidecar.Name == "" {
			return errors.New("sidecar injector: the sidecar needs a name")
		}
		base := cfg.Admission
		if base == nil {
			return errors.New("sidecar injector: the API server has no admission chain to extend")
		}
		chain, err := admission.NewChain([]admission.Admitter{base, in, admission.NewDefaulter()}, []admission.Validator{base})
		if err != nil {
			return fmt.Errorf("sidecar injector: %w", err)
		}
		cfg.Admission = chain
		return nil
	}
}
