package fieldmanager

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sentinels for errors.Is. Every error Apply returns for a client mistake
// is also an API status error (apierrors.APIStatus) carrying the code,
// reason and message kube-apiserver sends, so the REST layer can pass it on
// unchanged.
var (
	// ErrConflict: the apply touches fields another manager owns and force
	// was not set (409, reason Conflict, one cause per field).
	ErrConflict = errors.New("apply conflict")
	// ErrInvalidOptions: the request options are invalid, e.g. apply
	// without a fieldManager (422, reason Invalid, kind PatchOptions).
	ErrInvalidOptions = errors.New("invalid field manager options")
	// ErrBadPatch: the apply patch cannot be decoded, names the wrong
	// kind or version, sets managedFields, or has duplicate fields under
	// fieldValidation=Strict (400, reason BadRequest).
	ErrBadPatch = errors.New("bad apply patch")
	// ErrMerge: the merge itself failed, mostly because the patch does
	// not fit the kind's schema (an unknown field, a wrong type).
	// Kubernetes answers these with 500, no reason and the merge library's
	// message, and so does podkit.
	ErrMerge = errors.New("apply merge failed")
	// ErrUnknownKind: the kind has no structured-merge-diff schema, so its
	// fields cannot be tracked.
	ErrUnknownKind = errors.New("no schema for kind")
)

// statusError is an API status error that also matches a sentinel.
type statusError struct {
	status *apierrors.StatusError
	kind   error
}

func (e *statusError) Error() string { return e.status.Error() }

// Status implements apierrors.APIStatus.
func (e *statusError) Status() metav1.Status { return e.status.Status() }

// Unwrap lets errors.Is find the sentinel and errors.As the StatusError.
func (e *statusError) Unwrap() []error { return []error{e.kind, e.status} }

func withSentinel(kind error, st *apierrors.StatusError) error {
	return &statusError{status: st, kind: kind}
}

// internalError is the status kube-apiserver derives from an error that is
// not an API status: code 500, no reason, the error text as message.
func internalError(kind error, err error) error {
	return withSentinel(kind, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonUnknown,
		Message: err.Error(),
	}})
}

// classify attaches a sentinel to an error from the merge library.
func classify(err error) error {
	var st *apierrors.StatusError
	if !errors.As(err, &st) {
		return internalError(ErrMerge, err)
	}
	switch st.ErrStatus.Reason {
	case metav1.StatusReasonConflict:
		return withSentinel(ErrConflict, st)
	case metav1.StatusReasonBadRequest:
		return withSentinel(ErrBadPatch, st)
	}
	return st
}
