// Package validation is the "validation" part of step 3 of the birth
// sequence: after mutating admission (defaulting, service-account injection,
// ...) and before the validating admission plugins, every object written to
// the API server is checked here, field by field, the way Kubernetes'
// pkg/apis/*/validation does it.
//
// Objects are the versioned k8s.io/api types (podkit has no internal API
// version). Validation assumes defaulting has already run — restartPolicy,
// dnsPolicy, imagePullPolicy, terminationMessagePolicy, protocols,
// terminationGracePeriodSeconds and friends are set — and reports a missing
// defaulted field as Required, as Kubernetes does; it never panics on an
// undefaulted or otherwise malformed object.
//
// The result of every check is a field.ErrorList with the field paths and
// messages Kubernetes uses, so that kubectl and client-go users see the same
// 422 Unprocessable Entity causes they would see from a real cluster. The REST
// layer turns a non-empty list into an error with NewInvalid, or uses the
// Validator directly as an admission.Validator.
//
// Entry points:
//
//   - Validator.ValidateCreate(obj): a new object (after name generation);
//   - Validator.ValidateUpdate(obj, old): an update of the main resource;
//   - Validator.ValidateStatusUpdate(obj, old): an update through the status
//     subresource.
//
// Each dispatches on the Go type of obj. Types without specific rules get
// ObjectMeta validation only. Whether a type is namespaced is derived from a
// built-in table of the k8s.io/api kinds (see Validator.Namespaced); for other
// types a ScopeFunc given with WithScope decides, and failing that the
// namespace is validated only when set.
//
// The package-level functions ValidateCreate, ValidateUpdate and
// ValidateStatusUpdate use a Validator with default options.
package validation
