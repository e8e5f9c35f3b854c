package fieldmanager

import (
	"strings"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxManagerLength is the longest field manager name the API accepts.
const MaxManagerLength = 128

// ManagerName returns the manager recorded for a create, update or
// non-apply patch: the request's fieldManager parameter, or else what
// kube-apiserver derives from the User-Agent header — the part before the
// first '/', without unprintable characters, cut to 128 bytes. kubectl sends
// its own names (kubectl-client-side-apply, kubectl-edit, kubectl-label,
// kubectl-create, ...) as fieldManager; other clients usually get their
// binary name from the user agent ("kubectl/v1.31.0 (linux/amd64) ..."
// gives "kubectl", a client-go program "main" or its own name).
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > MaxManagerLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

var (
	patchOptionsKind  = schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}
	createOptionsKind = schema.GroupKind{Group: metav1.GroupName, Kind: "CreateOptions"}
	updateOptionsKind = schema.GroupKind{Group: metav1.GroupName, Kind: "UpdateOptions"}
)

// ValidatePatchOptions checks a PATCH's options like kube-apiserver: apply
// (application/apply-patch+yaml or +cbor) requires a fieldManager, force is
// only for apply, the fieldManager is at most 128 printable characters,
// dryRun is All and fieldValidation is Ignore, Warn or Strict. The error is
// 422 Invalid of kind PatchOptions.meta.k8s.io, e.g.
// `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is
// required for apply patch`, and matches ErrInvalidOptions.
func ValidatePatchOptions(opts *metav1.PatchOptions, pt types.PatchType) error {
	return invalid(patchOptionsKind, metav1validation.ValidatePatchOptions(opts, pt))
}

// ValidateCreateOptions checks a POST's options (fieldManager, dryRun,
// fieldValidation) like kube-apiserver.
func ValidateCreateOptions(opts *metav1.CreateOptions) error {
	return invalid(createOptionsKind, metav1validation.ValidateCreateOptions(opts))
}

// ValidateUpdateOptions checks a PUT's options like kube-apiserver.
func ValidateUpdateOptions(opts *metav1.UpdateOptions) error {
	return invalid(updateOptionsKind, metav1validation.ValidateUpdateOptions(opts))
}

func invalid(kind schema.GroupKind, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return withSentinel(ErrInvalidOptions, apierrors.NewInvalid(kind, "", errs))
}
