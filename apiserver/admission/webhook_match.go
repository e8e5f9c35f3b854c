package admission

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// webhookSpec is what mutating and validating webhooks share.
type webhookSpec struct {
	Config             string // the configuration's name
	Name               string
	ClientConfig       admissionregistrationv1.WebhookClientConfig
	Rules              []admissionregistrationv1.RuleWithOperations
	FailurePolicy      admissionregistrationv1.FailurePolicyType
	NamespaceSelector  *metav1.LabelSelector
	ObjectSelector     *metav1.LabelSelector
	SideEffects        *admissionregistrationv1.SideEffectClass
	TimeoutSeconds     *int32
	ReinvocationPolicy admissionregistrationv1.ReinvocationPolicyType
}

func fromMutating(cfg string, w *admissionregistrationv1.MutatingWebhook) webhookSpec {
	s := webhookSpec{Config: cfg, Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules,
		NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
		TimeoutSeconds: w.TimeoutSeconds, FailurePolicy: admissionregistrationv1.Fail,
		ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy}
	if w.FailurePolicy != nil {
		s.FailurePolicy = *w.FailurePolicy
	}
	if w.ReinvocationPolicy != nil {
		s.ReinvocationPolicy = *w.ReinvocationPolicy
	}
	return s
}

func fromValidating(cfg string, w *admissionregistrationv1.ValidatingWebhook) webhookSpec {
	s := webhookSpec{Config: cfg, Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules,
		NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector, SideEffects: w.SideEffects,
		TimeoutSeconds: w.TimeoutSeconds, FailurePolicy: admissionregistrationv1.Fail}
	if w.FailurePolicy != nil {
		s.FailurePolicy = *w.FailurePolicy
	}
	return s
}

// RuleMatches reports whether a webhook rule selects the request, with
// Kubernetes' semantics: "*" for operations, groups and versions; for
// resources "*" is every resource (no subresources), "*/*" everything,
// "pods/*" every subresource of pods, "*/status" every status
// subresource; scope "Cluster" or "Namespaced" restricts by the request's
// namespace ("*" or unset: both).
func RuleMatches(r admissionregistrationv1.RuleWithOperations, a *Attributes) bool {
	opOK := false
	for _, op := range r.Operations {
		if op == admissionregistrationv1.OperationAll || string(op) == string(a.Operation) {
			opOK = true
			break
		}
	}
	if !opOK || !matchAny(r.APIGroups, a.Resource.Group) || !matchAny(r.APIVersions, a.Resource.Version) {
		return false
	}
	resOK := false
	for _, res := range r.Resources {
		main, sub, _ := strings.Cut(res, "/")
		if (main == "*" || main == a.Resource.Resource) && (sub == a.Subresource || sub == "*") {
			resOK = true
			break
		}
	}
	if !resOK {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.ClusterScope:
			return a.Namespace == "" || isNamespaceRequest(a)
		case admissionregistrationv1.NamespacedScope:
			return a.Namespace != "" && !isNamespaceRequest(a)
		}
	}
	return true
}

func matchAny(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

func isNamespaceRequest(a *Attributes) bool {
	return a.Resource.Group == "" && a.Resource.Resource == "namespaces"
}

// matches reports whether the webhook applies to a: a rule matches, and
// the namespace and object selectors select it.
func (d *Webhooks) matches(ctx context.Context, w *webhookSpec, a *Attributes) (bool, error) {
	ruleOK := false
	for _, r := range w.Rules {
		if RuleMatches(r, a) {
			ruleOK = true
			break
		}
	}
	if !ruleOK {
		return false, nil
	}
	if ok, err := d.namespaceMatches(ctx, w.NamespaceSelector, a); !ok || err != nil {
		return ok, err
	}
	return objectMatches(w.ObjectSelector, a)
}

func selectorFor(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(ls)
}

func (d *Webhooks) namespaceMatches(ctx context.Context, ls *metav1.LabelSelector, a *Attributes) (bool, error) {
	sel, err := selectorFor(ls)
	if err != nil {
		return false, fmt.Errorf("invalid namespaceSelector: %w", err)
	}
	if sel.Empty() {
		return true, nil
	}
	if isNamespaceRequest(a) {
		return objectLabelsMatch(sel, a), nil
	}
	if a.Namespace == "" {
		return true, nil
	}
	ns, found, err := getTyped[*corev1.Namespace](ctx, d.cfg.Store, storage.Key(namespacesGR, "", a.Namespace))
	if err != nil {
		return false, err
	}
	if !found {
		return false, fmt.Errorf("namespace %q not found", a.Namespace)
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}

func objectMatches(ls *metav1.LabelSelector, a *Attributes) (bool, error) {
	sel, err := selectorFor(ls)
	if err != nil {
		return false, fmt.Errorf("invalid objectSelector: %w", err)
	}
	if sel.Empty() {
		return true, nil
	}
	return objectLabelsMatch(sel, a), nil
}

func objectLabelsMatch(sel labels.Selector, a *Attributes) bool {
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		if o == nil {
			continue
		}
		if m, err := meta.Accessor(o); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			return true
		}
	}
	return false
}
