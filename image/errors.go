package image

import (
	"errors"
	"fmt"

	"github.com/podkit/podkit/image/content"
)

// Errors carrying the Kubernetes container waiting reasons: their text is
// the reason the kubelet reports (ErrImagePull, ErrImageNeverPull,
// InvalidImageName). Errors from Service.Ensure wrap one of them and the
// cause, so errors.Is works for both.
var (
	ErrImagePull        = errors.New("ErrImagePull")
	ErrImageNeverPull   = errors.New("ErrImageNeverPull")
	ErrInvalidImageName = errors.New("InvalidImageName")
)

// Causes of a failed pull or lookup.
var (
	// ErrNotFound reports an image or blob not present in the local store.
	ErrNotFound = errors.New("image not found")
	// ErrManifestUnknown reports that the registry does not have the image
	// (HTTP 404: unknown repository, tag or digest).
	ErrManifestUnknown = errors.New("manifest unknown")
	// ErrAuthRequired reports HTTP 401/403 from a registry when no
	// credentials were sent.
	ErrAuthRequired = errors.New("authentication required")
	// ErrAuthFailed reports HTTP 401/403 although credentials were sent:
	// they are wrong or lack access.
	ErrAuthFailed = errors.New("credentials rejected")
	// ErrRegistryUnavailable reports a registry that could not be reached
	// or answered with a server error.
	ErrRegistryUnavailable = errors.New("registry unavailable")
	// ErrDigestMismatch reports content whose digest or size is not the
	// one its descriptor names.
	ErrDigestMismatch = content.ErrDigestMismatch
	// ErrNoMatchingPlatform reports a manifest list without an entry for
	// the node's platform.
	ErrNoMatchingPlatform = errors.New("no matching manifest for platform")
	// ErrInUse reports an image that cannot be removed because it is
	// pinned or used.
	ErrInUse = errors.New("image in use")
	// ErrInvalidConfig reports an invalid option or configuration file.
	ErrInvalidConfig = errors.New("invalid configuration")
)

// Reason returns the Kubernetes container waiting reason for an error of
// Service.Ensure ("ErrImagePull", "ErrImageNeverPull", "InvalidImageName"),
// or "" when err carries none.
func Reason(err error) string {
	for _, r := range []error{ErrInvalidImageName, ErrImageNeverPull, ErrImagePull} {
		if errors.Is(err, r) {
			return r.Error()
		}
	}
	return ""
}

// reasonError pairs a Kubernetes reason with a message (the text the
// kubelet puts in the container status) and the cause.
type reasonError struct {
	reason error
	msg    string
	cause  error
}

func (e *reasonError) Error() string   { return e.msg }
func (e *reasonError) Unwrap() []error { return []error{e.reason, e.cause} }

func withReason(reason, cause error, format string, args ...any) error {
	return &reasonError{reason: reason, cause: cause, msg: fmt.Sprintf(format, args...)}
}
