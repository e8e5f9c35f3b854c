// Package fieldmanager implements server-side apply and the field ownership
// tracking behind metadata.managedFields for the podkit API server.
//
// It belongs to steps 1 and 4 of the birth sequence: when a client writes an
// object, the REST handlers call it after decoding the request and before
// admission, validation and storage. A PATCH with Content-Type
// application/apply-patch+yaml is merged by Apply (kubectl apply
// --server-side, client-go's Apply methods, controllers using apply
// configurations); every other create, update and patch is recorded by
// Update, so that a later apply knows who set which field and can report
// conflicts the way kube-apiserver does:
//
//	Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas
//
// # How it is built
//
// kube-apiserver's field manager lives in k8s.io/apimachinery
// (pkg/util/managedfields): a stack of managers that version-checks the
// patch, reconciles kubectl's last-applied-configuration annotation,
// caps the number of update managers at ten, strips identity metadata,
// drops the fields a subresource resets, and runs the structured-merge-diff
// merge. k8s.io/apiserver's handlers/fieldmanager package only adds thin
// wrappers on top, so this package uses apimachinery directly and adds no
// module. What it supplies is what kube-apiserver's request scope
// supplies: the type converter (client-go's compiled merge schema, the
// one the OpenAPI documents of apiserver/openapi draw their list and map
// semantics from, plus autoscaling/v1 Scale), the scheme as object creator
// and converter (podkit has no internal version: each served version is its
// own hub), podkit's defaulting for apply results, the reset fields of each
// strategy (DefaultResetFields), an injectable clock for entry times, the
// manager name derived from the User-Agent (ManagerName), the
// scale-subresource mapping (UpdateScale, ApplyScale), the no-op timestamp rule
// (IgnoreTimestampOnlyChanges) and the post-admission check
// (CheckAfterAdmission).
//
// Creates and ordinary updates of typed objects — most writes of a
// cluster: controllers creating pods, the kubelet writing pod and node
// status, scaling, lease renewals, event counts — skip the library. One
// walk over the Go values of live and new (walk.go) computes what the
// library's conversion, validation and comparison of the two report, rule
// for rule; createFields and updateFields (createfields.go,
// updatefields.go) turn it into the very entries the library writes, byte
// for byte and in its order, decoding each distinct entry JSON once
// (setcache.go). A create's walk does not even build a set: it writes the
// paths it finds into a buffer (the create's shape, shape.go), and a
// shape equal byte for byte to one of the kind's latest creates takes
// that create's set and JSON, so the Events of one component and the pods
// of one template cost one walk each. Timestamps and quantities are only
// turned into strings when compared (nodelazy.go). Whatever they do not
// cover — unstructured objects, entries of other apiVersions, a client
// replacing managedFields, more than ten Update entries, an invalid
// value — goes the library's way. A pod create costs a fifth of the
// library's CPU, an Event create a sixth, a kubelet status write a sixth;
// the tests compare both paths on tables of writes, on random objects and
// on sequences of creates whose shapes repeat and change.
//
// Start-up costs one parse of client-go's schema, about 100 ms on first
// use in the process (shared with the OpenAPI documents); each kind's field
// manager is then built on first use in microseconds.
//
// # Semantics kept from Kubernetes
//
//   - Apply requires a fieldManager; force is only meaningful for apply.
//     Update takes the fieldManager parameter or else the User-Agent prefix.
//   - Entries carry manager, operation (Apply or Update), apiVersion, time,
//     fieldsType FieldsV1 and the subresource. Writes through the status
//     subresource never own spec, writes through the main resource never own
//     status.
//   - A client may replace managedFields through the main resource, or
//     reset them with an empty list; through a subresource they are ignored.
//   - An object that exists without managedFields starts being tracked on
//     its next apply (its existing fields are attributed to
//     "before-first-apply"), not on updates.
//   - Errors carry the status code, reason, message and causes
//     kube-apiserver returns (see the sentinels).
package fieldmanager
