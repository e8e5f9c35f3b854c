// Package authz holds the authorization chain of step 2 of the birth
// sequence ("Authentication → Authorization → Admission") and the simple
// authorizers that compose it: Union asks each authorizer in turn and the
// first Allow or Deny wins, as kube-apiserver's --authorization-mode list
// does; AlwaysAllow and AlwaysDeny; and Webhook, which asks a remote
// service with a SubjectAccessReview and caches its answers. The RBAC and
// Node authorizers live in their own packages (apiserver/auth/rbac,
// apiserver/auth/nodeauthz) and slot into the same chain.
//
// A request every authorizer has no opinion on is forbidden; Forbidden
// builds the 403 with Kubernetes' exact message so clients and operators
// see what they would see from kube-apiserver.
package authz
