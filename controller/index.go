package controller

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// ControllerUIDIndex names the informer index that maps the UID of an
// object's controller to the object; objects without a controller are
// indexed under OrphanIndexKey(namespace). With it a controller reads its
// own pods (or ReplicaSets) and its namespace's orphans instead of every
// object of the namespace on every sync, which keeps 10,000-replica
// deployments linear.
const ControllerUIDIndex = "podkit.io/controller-uid"

// OrphanIndexKey is the ControllerUIDIndex value of objects in namespace
// that have no controller.
func OrphanIndexKey(namespace string) string { return "orphan/" + namespace }

func controllerUIDIndexFunc(obj any) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanIndexKey(m.GetNamespace())}, nil
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// AddControllerUIDIndex adds the ControllerUIDIndex to informer if it is
// not there yet; several controllers sharing the informer may all call it
// (before the factory starts).
func AddControllerUIDIndex(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	if err := informer.AddIndexers(cache.Indexers{ControllerUIDIndex: controllerUIDIndexFunc}); err != nil {
		return fmt.Errorf("adding index %s: %w", ControllerUIDIndex, err)
	}
	return nil
}

// ByControllerUID returns the objects of indexer controlled by the object
// with uid plus the orphans of namespace, converted to T.
func ByControllerUID[T runtime.Object](indexer cache.Indexer, uid, namespace string) ([]T, error) {
	var out []T
	for _, key := range []string{uid, OrphanIndexKey(namespace)} {
		objs, err := indexer.ByIndex(ControllerUIDIndex, key)
		if err != nil {
			return nil, fmt.Errorf("reading index %s[%s]: %w", ControllerUIDIndex, key, err)
		}
		for _, o := range objs {
			if t, ok := o.(T); ok {
				out = append(out, t)
			}
		}
	}
	return out, nil
}
