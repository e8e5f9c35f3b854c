// Package serviceaccount is the ServiceAccount controller of the controller
// manager: every active namespace has the `default` ServiceAccount (or the
// accounts configured), created when the namespace appears and created
// again whenever someone deletes it.
//
// Its place in the pod birth sequence: the ServiceAccount admission plugin
// rejects a pod whose spec.serviceAccountName (defaulted to "default") does
// not exist, so without this controller no pod can be created in a new
// namespace. The API server also creates the account synchronously on
// namespace creation (so a pod posted right after its namespace is admitted
// without waiting for a watch round trip); this controller owns the
// invariant afterwards: it is idempotent (an existing account is left
// alone, AlreadyExists is success), it recreates deleted accounts, and it
// never touches namespaces that are Terminating (the namespace controller is
// emptying them, and admission would refuse the create anyway).
//
// Like Kubernetes' ServiceAccountsController it is level-triggered on
// namespaces: namespace adds and updates, and deletions of a managed
// account, enqueue the namespace; a sync compares the informer cache with
// the wanted accounts and creates what is missing.
package serviceaccount
