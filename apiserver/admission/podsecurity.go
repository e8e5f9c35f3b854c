package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	psadmission "k8s.io/pod-security-admission/admission"
	psaconfig "k8s.io/pod-security-admission/admission/api"
	psaapi "k8s.io/pod-security-admission/api"
	psametrics "k8s.io/pod-security-admission/metrics"
	"k8s.io/pod-security-admission/policy"

	"github.com/podkit/podkit/apiserver/storage"
)

// PodSecurity is Kubernetes' PodSecurity admission plugin: pods (and the
// pod templates of workloads) are checked against the Pod Security
// Standards level — privileged, baseline or restricted — their namespace
// selects with the pod-security.kubernetes.io/enforce, warn and audit
// labels (and their -version companions). An enforce violation rejects a
// pod with Kubernetes' message (`pods "x" is forbidden: violates
// PodSecurity "restricted:latest": privileged (container "c" must not set
// securityContext.privileged=true), ...`); warn violations become
// Warning headers; audit violations become audit annotations. Workloads
// are only warned and audited, and namespace label changes are validated
// and warn about existing pods that would violate the new level.
//
// The checks and messages are the k8s.io/pod-security-admission library's
// — the code kube-apiserver runs — so they match Kubernetes exactly.
type PodSecurity struct {
	delegate *psadmission.Admission
}

var (
	_ Validator = (*PodSecurity)(nil)
	_ Handler   = (*PodSecurity)(nil)
	_ Namer     = (*PodSecurity)(nil)
)

// PodSecurityDefaults are the levels of namespaces without labels, as the
// PodSecurityConfiguration's defaults: level "privileged", "baseline" or
// "restricted", version "latest" or "v1.N". Empty fields mean privileged
// and latest.
type PodSecurityDefaults struct {
	Enforce, EnforceVersion string
	Audit, AuditVersion     string
	Warn, WarnVersion       string
}

// PodSecurityExemptions exempt requests from every check.
type PodSecurityExemptions struct {
	Usernames, Namespaces, RuntimeClasses []string
}

// PodSecurityConfig configures the PodSecurity plugin.
type PodSecurityConfig struct {
	// Store reads namespaces and pods. Required.
	Store      ObjectReader
	Defaults   PodSecurityDefaults
	Exemptions PodSecurityExemptions
	Logger     *slog.Logger
}

// NewPodSecurity builds the PodSecurity plugin.
func NewPodSecurity(cfg PodSecurityConfig) (*PodSecurity, error) {
	if cfg.Store == nil {
		return nil, errors.New("admission: PodSecurity needs a store")
	}
	level := func(l string) string {
		if l == "" {
			return string(psaapi.LevelPrivileged)
		}
		return l
	}
	version := func(v string) string {
		if v == "" {
			return psaapi.VersionLatest
		}
		return v
	}
	d := cfg.Defaults
	conf := &psaconfig.PodSecurityConfiguration{
		Defaults: psaconfig.PodSecurityDefaults{
			Enforce: level(d.Enforce), EnforceVersion: version(d.EnforceVersion),
			Audit: level(d.Audit), AuditVersion: version(d.AuditVersion),
			Warn: level(d.Warn), WarnVersion: version(d.WarnVersion),
		},
		Exemptions: psaconfig.PodSecurityExemptions{
			Usernames: cfg.Exemptions.Usernames, Namespaces: cfg.Exemptions.Namespaces, RuntimeClasses: cfg.Exemptions.RuntimeClasses,
		},
	}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("admission: PodSecurity checks: %w", err)
	}
	a := &psadmission.Admission{
		Configuration:   conf,
		Evaluator:       eval,
		Metrics:         nopPSARecorder{},
		NamespaceGetter: storeNamespaces{cfg.Store},
		PodLister:       storePods{cfg.Store},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("admission: PodSecurity configuration: %w", err)
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("admission: PodSecurity configuration: %w", err)
	}
	return &PodSecurity{delegate: a}, nil
}

// Name is the plugin's name, as --enable-admission-plugins spells it.
func (p *PodSecurity) Name() string { return "PodSecurity" }

// Handles creates and updates.
func (p *PodSecurity) Handles(op Operation) bool { return op == Create || op == Update }

// Validate checks the request against its namespace's levels.
func (p *PodSecurity) Validate(ctx context.Context, a *Attributes) error {
	if a.Object == nil {
		return nil
	}
	gr := a.Resource.GroupResource()
	if gr != podsGR && gr != namespacesGR && !(psadmission.DefaultPodSpecExtractor{}).HasPodSpec(gr) {
		return nil
	}
	attrs := &psaapi.AttributesRecord{
		Name: a.Name, Namespace: a.Namespace, Kind: a.Kind, Resource: a.Resource, Subresource: a.Subresource,
		Operation: admissionv1.Operation(a.Operation), Object: a.Object, OldObject: a.OldObject,
	}
	if attrs.Name == "" {
		if m, ok := a.Object.(interface{ GetName() string }); ok {
			attrs.Name = m.GetName()
		}
	}
	if a.User != nil {
		attrs.Username = a.User.GetName()
	}
	resp := p.delegate.Validate(ctx, attrs)
	for _, w := range resp.Warnings {
		AddWarning(ctx, w)
	}
	for k, v := range resp.AuditAnnotations {
		AddAuditAnnotation(ctx, "pod-security.kubernetes.io/"+k, v)
	}
	if resp.Allowed {
		return nil
	}
	err := apierrors.NewForbidden(gr, a.Name, errors.New("Not allowed by PodSecurity"))
	if r := resp.Result; r != nil {
		if r.Message != "" {
			err.ErrStatus.Message = r.Message
		}
		if r.Reason != "" {
			err.ErrStatus.Reason = r.Reason
		}
		if r.Code != 0 {
			err.ErrStatus.Code = r.Code
		}
		if r.Details != nil {
			err.ErrStatus.Details = r.Details
		}
	}
	return err
}

// storeNamespaces and storePods read what the library asks for.
type storeNamespaces struct{ st ObjectReader }

func (s storeNamespaces) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, found, err := getTyped[*corev1.Namespace](ctx, s.st, storage.Key(namespacesGR, "", name))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, apierrors.NewNotFound(namespacesGR, name)
	}
	return ns, nil
}

type storePods struct{ st ObjectReader }

func (s storePods) ListPods(ctx context.Context, namespace string) ([]*corev1.Pod, error) {
	objs, err := listAll(ctx, s.st, storage.Key(podsGR, namespace, ""))
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// nopPSARecorder drops the library's metrics; the chain's own admission
// metrics time the plugin.
type nopPSARecorder struct{}

func (nopPSARecorder) RecordEvaluation(psametrics.Decision, psaapi.LevelVersion, psametrics.Mode, psaapi.Attributes) {
}
func (nopPSARecorder) RecordExemption(psaapi.Attributes)   {}
func (nopPSARecorder) RecordError(bool, psaapi.Attributes) {}
