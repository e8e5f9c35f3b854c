package apiserver

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// toStatus turns any error into the metav1.Status sent to clients. API errors
// keep their status; anything else is an internal error.
func toStatus(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		st := apiStatus.Status()
		st.Kind, st.APIVersion = "Status", "v1"
		if st.Status == "" {
			st.Status = metav1.StatusFailure
		}
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		return &st
	}
	st := apierrors.NewInternalError(err).Status()
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// storageError maps a storage sentinel to the API error Kubernetes returns
// for it; other errors pass through.
func storageError(err error, gr schema.GroupResource, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(
			"the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, storage.ErrGone):
		return apierrors.NewResourceExpired(err.Error())
	case errors.Is(err, storage.ErrContinueExpired):
		return apierrors.NewResourceExpired(fmt.Sprintf("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. (%v)", err))
	case errors.Is(err, storage.ErrInvalidContinue):
		return apierrors.NewBadRequest(err.Error())
	case errors.Is(err, storage.ErrTooLargeResourceVersion):
		return tooLargeResourceVersion(err.Error())
	case errors.Is(err, storage.ErrInvalidObject):
		return apierrors.NewBadRequest(err.Error())
	}
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		return err
	}
	return apierrors.NewInternalError(err)
}

// newStatusError builds an API error with an explicit code and reason.
func newStatusError(code int32, reason metav1.StatusReason, message, detailsName string) error {
	st := metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Message: message}
	if detailsName != "" {
		st.Details = &metav1.StatusDetails{Name: detailsName}
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// tooLargeResourceVersion is the 504 kube-apiserver answers for a
// resourceVersion the store has not reached; client-go's reflector relists
// on its cause.
func tooLargeResourceVersion(msg string) error {
	st := apierrors.NewTimeoutError(msg, 1).Status()
	st.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return &apierrors.StatusError{ErrStatus: st}
}
