package fieldmanager

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// CheckAfterAdmission protects managedFields from mutating admission, as
// kube-apiserver's managed-fields validating admission wrapper does:
// before is obj's managedFields as they were before mutating admission ran;
// if admission left obj's managedFields undecodable, they are set back to
// before and the warning to send the client is returned (empty otherwise).
func CheckAfterAdmission(obj runtime.Object, before []metav1.ManagedFieldsEntry) string {
	a, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if err := managedfields.ValidateManagedFields(a.GetManagedFields()); err != nil {
		a.SetManagedFields(before)
		return fmt.Sprintf(".metadata.managedFields was in an invalid state after admission; "+
			"this could be caused by an outdated mutating admission controller; please fix your requests: %v", err)
	}
	return ""
}
