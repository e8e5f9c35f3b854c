package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// NamespaceLifecycleName names the NamespaceLifecycle plugin.
const NamespaceLifecycleName = "NamespaceLifecycle"

// NamespaceLifecycle enforces what Kubernetes' plugin of the same name does:
//
//   - creating or updating a namespaced object in a namespace that does not
//     exist fails with 404 NotFound (`namespaces "x" not found`);
//   - creating one in a namespace being deleted (phase Terminating or a
//     deletion timestamp) fails with 403 Forbidden (`unable to create new
//     content in namespace x because it is being terminated`, with a
//     NamespaceTerminating cause), events included, as in Kubernetes;
//   - deleting an immortal namespace (default, kube-system, kube-public)
//     fails with 403 (`this namespace may not be deleted`).
//
// Cluster-scoped objects, namespaces themselves, deletions of other objects
// and LocalSubjectAccessReviews are always allowed. Like Kubernetes' it is a
// mutating-phase plugin (an Admitter), so it rejects before the other
// plugins do any work; it does not mutate.
type NamespaceLifecycle struct {
	namespaces ObjectGetter
	immortal   map[string]bool
}

var (
	_ Admitter = (*NamespaceLifecycle)(nil)
	_ Handler  = (*NamespaceLifecycle)(nil)
	_ Namer    = (*NamespaceLifecycle)(nil)
)

// NamespaceLifecycleConfig configures NewNamespaceLifecycle.
type NamespaceLifecycleConfig struct {
	// Namespaces reads namespaces from storage. Required.
	Namespaces ObjectGetter
	// ImmortalNamespaces may never be deleted. Nil means default,
	// kube-system and kube-public; an empty non-nil slice means none.
	ImmortalNamespaces []string
}

// NewNamespaceLifecycle returns the NamespaceLifecycle plugin.
func NewNamespaceLifecycle(cfg NamespaceLifecycleConfig) (*NamespaceLifecycle, error) {
	if cfg.Namespaces == nil {
		return nil, errors.New("admission: NamespaceLifecycle needs a namespace store")
	}
	names := cfg.ImmortalNamespaces
	if names == nil {
		names = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}
	}
	l := &NamespaceLifecycle{namespaces: cfg.Namespaces, immortal: map[string]bool{}}
	for _, n := range names {
		l.immortal[n] = true
	}
	return l, nil
}

// Name implements Namer.
func (*NamespaceLifecycle) Name() string { return NamespaceLifecycleName }

// Handles implements Handler: create, update and delete.
func (*NamespaceLifecycle) Handles(op Operation) bool {
	return op == Create || op == Update || op == Delete
}

var accessReviewGR = schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}

// Admit implements Admitter.
func (l *NamespaceLifecycle) Admit(ctx context.Context, a *Attributes) error {
	isNamespace := a.Resource.GroupResource() == namespacesGR || a.Kind.GroupKind() == namespaceGK
	if isNamespace {
		if a.Operation == Delete && l.immortal[a.Name] {
			return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("this namespace may not be deleted"))
		}
		return nil
	}
	if a.Namespace == "" || a.Operation == Delete || a.Resource.GroupResource() == accessReviewGR {
		return nil
	}

	ns, found, err := getTyped[*corev1.Namespace](ctx, l.namespaces, storage.Key(namespacesGR, "", a.Namespace))
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("looking up namespace %q: %w", a.Namespace, err))
	}
	if !found {
		return apierrors.NewNotFound(namespacesGR, a.Namespace)
	}
	if a.Operation != Create || !namespaceTerminating(ns) {
		return nil
	}
	err = NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Details != nil {
		se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
	}
	return err
}

func namespaceTerminating(ns *corev1.Namespace) bool {
	return ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil
}
