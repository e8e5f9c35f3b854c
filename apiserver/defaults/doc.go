// Package defaults fills in the fields Kubernetes defaults when it decodes a
// v1 object: the SetObjectDefaults_* semantics of k8s.io/kubernetes'
// pkg/apis/*/v1 packages, including the declarative (+default) markers of
// k8s.io/api, written as plain functions over the k8s.io/api types.
//
// It belongs to step 3 of the birth sequence: the Defaulter admission plugin
// (apiserver/admission) calls Default on every create and update before the
// other mutating plugins run, so that they, validation and the client see the
// object exactly as a real API server would return it (restartPolicy Always,
// imagePullPolicy IfNotPresent, terminationMessagePath, ...).
//
// Everything here is pure: no clock, no storage, no feature gates (features
// that are on by default in Kubernetes are treated as on). Defaulting that
// needs the cluster (a pod's priority, its service account, a service's
// cluster IPs and IP families, a job's generated selector) belongs to the
// admission plugins and the REST strategies, not to this package.
package defaults
