// Package nodeauthz is the Node authorizer of step 2 of the birth
// sequence: it confines a kubelet — a user system:node:<name> in the group
// system:nodes — to what its node needs. A kubelet reads and writes its
// own Node and its Lease, gets the pods bound to it and, through a graph
// built by watching pods in the store, the secrets, config maps,
// persistent volume claims and service account tokens those pods
// reference. A request for one of those resources that falls outside the
// graph gets no opinion with a reason, and so is forbidden unless another
// authorizer allows it. Other requests of a node are allowed when the
// system:node rules grant them (as Kubernetes' Node authorizer does; that
// role is bound to nobody by default) and get no opinion otherwise, so
// RBAC still decides. Requests of other users get no opinion.
//
// The graph lags the store by a watch event: a kubelet that sees a pod
// bound to it before the authorizer does may get one 403 and retries, as
// with kube-apiserver.
package nodeauthz
