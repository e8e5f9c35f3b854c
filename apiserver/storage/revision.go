package storage

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Revision returns the revision stamped on obj: its metadata.resourceVersion
// parsed as a decimal uint64. An empty resourceVersion is revision 0. Errors
// wrap ErrInvalidObject.
func Revision(obj runtime.Object) (uint64, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, fmt.Errorf("reading resourceVersion: %w: %w", ErrInvalidObject, err)
	}
	s := m.GetResourceVersion()
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("resourceVersion %q is not a revision: %w", s, ErrInvalidObject)
	}
	return rv, nil
}

// SetRevision stamps rv on obj as its metadata.resourceVersion, in decimal;
// revision 0 clears it. Errors wrap ErrInvalidObject.
func SetRevision(obj runtime.Object, rv uint64) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("setting resourceVersion: %w: %w", ErrInvalidObject, err)
	}
	if rv == 0 {
		m.SetResourceVersion("")
		return nil
	}
	m.SetResourceVersion(strconv.FormatUint(rv, 10))
	return nil
}
