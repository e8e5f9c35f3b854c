// Package admission is step 3 of the birth sequence: after authentication and
// authorization, and before storage, every write passes the admission chain.
//
// A Chain runs every mutating Admitter in order (defaulting, namespace
// lifecycle, service accounts, limit ranges, ...), then the object's own
// validation, then every Validator (quota, ...). The first error stops the
// request; plugins return Kubernetes API errors (k8s.io/apimachinery/pkg/api/errors)
// so the client sees the status code and message Kubernetes would send —
// Forbidden (403) for policy rejections, Invalid (422) for bad fields.
//
// Users add their own stage by implementing Admitter or Validator (or wrapping
// a function in AdmitFunc / ValidateFunc) and putting it in the chain, as the
// sidecar-injector example does.
package admission
