package apiserver

import (
	"context"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authz"
)

// The access review APIs of authorization.k8s.io/v1: create-only virtual
// resources that are never stored. SelfSubjectAccessReview (kubectl auth
// can-i), SubjectAccessReview, LocalSubjectAccessReview and
// SelfSubjectRulesReview (kubectl auth can-i --list). Each answers with
// the object sent, its status filled in, and 201 Created.

var gvAuthorization = authorizationv1.SchemeGroupVersion

// AccessReviewResources returns the access review resources for
// discovery and routing (DefaultResources includes them).
func AccessReviewResources() []*Resource {
	return []*Resource{
		{GroupVersion: gvAuthorization, Resource: "localsubjectaccessreviews", Singular: "localsubjectaccessreview", Kind: "LocalSubjectAccessReview",
			Namespaced: true, Verbs: verbsCreate, New: func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }},
		{GroupVersion: gvAuthorization, Resource: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview",
			Verbs: verbsCreate, New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }},
		{GroupVersion: gvAuthorization, Resource: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview",
			Verbs: verbsCreate, New: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }},
		{GroupVersion: gvAuthorization, Resource: "subjectaccessreviews", Singular: "subjectaccessreview", Kind: "SubjectAccessReview",
			Verbs: verbsCreate, New: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }},
	}
}

type reviewFunc func(ctx context.Context, obj runtime.Object, namespace string) error

// reviewHandler returns the create handler of an access review resource.
func (s *Server) reviewHandler(res *Resource) (func(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error, bool) {
	var review reviewFunc
	switch res.GroupVersion.WithResource(res.Resource) {
	case gvAuthorization.WithResource("selfsubjectaccessreviews"):
		review = s.selfSubjectAccessReview
	case gvAuthorization.WithResource("subjectaccessreviews"):
		review = s.subjectAccessReview
	case gvAuthorization.WithResource("localsubjectaccessreviews"):
		review = s.localSubjectAccessReview
	case gvAuthorization.WithResource("selfsubjectrulesreviews"):
		review = s.selfSubjectRulesReview
	default:
		return nil, false
	}
	return func(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
		t, obj, err := s.decodeRequest(w, r, res.GroupVersionKind(), res.New())
		if err != nil {
			return err
		}
		if err := review(r.Context(), obj, info.Namespace); err != nil {
			return err
		}
		s.writeObject(w, r, http.StatusCreated, t, obj, res.GroupVersion)
		return nil
	}, true
}

// authorize asks the configured authorizer (allow-all when none).
func (s *Server) authorize(ctx context.Context, a auth.Attributes) authorizationv1.SubjectAccessReviewStatus {
	if s.cfg.Authorizer == nil {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	}
	d, reason, err := s.cfg.Authorizer.Authorize(ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == auth.DecisionAllow, Denied: d == auth.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

func reviewAttributes(u auth.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) auth.Attributes {
	a := auth.Attributes{User: u}
	if ra != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
		return a
	}
	if nra != nil {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	return a
}

func checkAttributes(kind string, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) error {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	switch {
	case ra == nil && nra == nil:
		errs = append(errs, field.Required(spec.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	case ra != nil && nra != nil:
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName, Kind: kind}, "", errs)
	}
	return nil
}

func (s *Server) selfSubjectAccessReview(ctx context.Context, obj runtime.Object, _ string) error {
	r := obj.(*authorizationv1.SelfSubjectAccessReview)
	if err := checkAttributes("SelfSubjectAccessReview", r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes); err != nil {
		return err
	}
	u := auth.UserFrom(ctx)
	r.Status = s.authorize(ctx, reviewAttributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return nil
}

func specUser(spec *authorizationv1.SubjectAccessReviewSpec) auth.User {
	u := &auth.DefaultUser{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

func (s *Server) subjectAccessReview(ctx context.Context, obj runtime.Object, _ string) error {
	r := obj.(*authorizationv1.SubjectAccessReview)
	if err := checkAttributes("SubjectAccessReview", r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes); err != nil {
		return err
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName, Kind: "SubjectAccessReview"}, "",
			field.ErrorList{field.Invalid(field.NewPath("spec", "user"), r.Spec.User, "at least one of user or group must be specified")})
	}
	r.Status = s.authorize(ctx, reviewAttributes(specUser(&r.Spec), r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
	return nil
}

func (s *Server) localSubjectAccessReview(ctx context.Context, obj runtime.Object, namespace string) error {
	r := obj.(*authorizationv1.LocalSubjectAccessReview)
	gk := schema.GroupKind{Group: authorizationv1.GroupName, Kind: "LocalSubjectAccessReview"}
	if r.Spec.ResourceAttributes == nil {
		return apierrors.NewInvalid(gk, "", field.ErrorList{field.Required(field.NewPath("spec", "resourceAttributes"), "resourceAttributes are required for a local review")})
	}
	if r.Spec.NonResourceAttributes != nil {
		return apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath("spec", "nonResourceAttributes"), r.Spec.NonResourceAttributes, "disallowed on this kind of request")})
	}
	if r.Spec.User == "" && len(r.Spec.Groups) == 0 {
		return apierrors.NewInvalid(gk, "", field.ErrorList{field.Invalid(field.NewPath("spec", "user"), r.Spec.User, "at least one of user or group must be specified")})
	}
	if r.Namespace == "" {
		r.Namespace = namespace
	}
	if r.Spec.ResourceAttributes.Namespace == "" {
		r.Spec.ResourceAttributes.Namespace = namespace
	}
	if r.Namespace != namespace || r.Spec.ResourceAttributes.Namespace != namespace {
		return apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: " + namespace)
	}
	r.Status = s.authorize(ctx, reviewAttributes(specUser(&r.Spec), r.Spec.ResourceAttributes, nil))
	return nil
}

func (s *Server) selfSubjectRulesReview(ctx context.Context, obj runtime.Object, _ string) error {
	r := obj.(*authorizationv1.SelfSubjectRulesReview)
	u := auth.UserFrom(ctx)
	var resolver authz.RulesResolver
	switch a := s.cfg.Authorizer.(type) {
	case nil:
		resolver = authz.Union(authz.AlwaysAllow())
	case authz.RulesResolver:
		resolver = a
	}
	if resolver == nil {
		r.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: true, EvaluationError: "the authorizer cannot list rules",
			ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
		return nil
	}
	res, non, incomplete, err := resolver.RulesFor(ctx, u, r.Spec.Namespace)
	st := authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete,
		ResourceRules: make([]authorizationv1.ResourceRule, 0, len(res)), NonResourceRules: make([]authorizationv1.NonResourceRule, 0, len(non))}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	for _, rr := range res {
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: rr.Verbs, APIGroups: rr.APIGroups, Resources: rr.Resources, ResourceNames: rr.ResourceNames})
	}
	for _, nr := range non {
		st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: nr.Verbs, NonResourceURLs: nr.NonResourceURLs})
	}
	r.Status = st
	return nil
}

var gvAdmissionRegistration = admissionregistrationv1.SchemeGroupVersion

// WebhookConfigurationResources returns the stored
// admissionregistration.k8s.io/v1 resources dynamic admission reads:
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration
// (DefaultResources includes them).
func WebhookConfigurationResources() []*Resource {
	return []*Resource{
		{GroupVersion: gvAdmissionRegistration, Resource: "mutatingwebhookconfigurations", Singular: "mutatingwebhookconfiguration",
			Kind: "MutatingWebhookConfiguration", Categories: []string{"api-extensions"},
			New:     func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }},
		{GroupVersion: gvAdmissionRegistration, Resource: "validatingwebhookconfigurations", Singular: "validatingwebhookconfiguration",
			Kind: "ValidatingWebhookConfiguration", Categories: []string{"api-extensions"},
			New:     func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }},
	}
}
