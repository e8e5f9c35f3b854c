package admission

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrPluginPanic is wrapped by the PluginError the chain returns when a
// plugin panicked.
var ErrPluginPanic = errors.New("admission plugin panicked")

// NewForbidden returns the 403 Kubernetes answers when admission rejects a
// request, `<resource> "<name>" is forbidden: <reason>`, naming the object
// by the request's name, else the object's name or generateName, else
// "Unknown". A reason that already is a Forbidden error is returned as is.
func NewForbidden(a *Attributes, reason error) error {
	if apierrors.IsForbidden(reason) {
		return reason
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), objectName(a), reason)
}

// objectName names the object a request is about for error messages.
func objectName(a *Attributes) string {
	if a.Name != "" {
		return a.Name
	}
	if a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			if m.GetName() != "" {
				return m.GetName()
			}
			if m.GetGenerateName() != "" {
				return m.GetGenerateName()
			}
		}
	}
	return "Unknown"
}

// PluginError is what the chain returns when a plugin fails with an error
// that is not a Kubernetes API error: it carries the API status the client
// sees (403 Forbidden, or 500 for a cancelled context or a panic) and still
// unwraps to the plugin's own error, so both apierrors.IsForbidden(err) and
// errors.Is(err, yourSentinel) work.
type PluginError struct {
	// Plugin is the failing plugin's name.
	Plugin string
	// Err is the plugin's error.
	Err    error
	status *apierrors.StatusError
}

// Error is the message the client sees.
func (e *PluginError) Error() string { return e.status.Error() }

// Status implements apierrors.APIStatus.
func (e *PluginError) Status() metav1.Status { return e.status.Status() }

// Unwrap returns the plugin's error.
func (e *PluginError) Unwrap() error { return e.Err }

var _ apierrors.APIStatus = (*PluginError)(nil)
