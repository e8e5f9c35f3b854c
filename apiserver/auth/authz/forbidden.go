package authz

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/auth"
)

// ForbiddenMessage is kube-apiserver's description of a forbidden
// request, e.g. `User "jane" cannot list resource "pods" in API group ""
// in the namespace "default"`.
func ForbiddenMessage(a auth.Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.GetName()
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}

// Forbidden is the 403 Status error for a request no authorizer allowed:
// `pods is forbidden: User "jane" cannot list resource "pods" in API
// group "" in the namespace "default"`, with ": <reason>" when the
// authorizers gave one.
func Forbidden(a auth.Attributes, reason string) *apierrors.StatusError {
	msg := ForbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}
