package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/storage"
)

// SystemNamespaces always exist in a cluster.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Bootstrap creates what every cluster starts with: the system namespaces
// and their default service accounts. It is idempotent, so a restarted
// server on a stored cluster changes nothing.
func (s *Server) Bootstrap(ctx context.Context) error {
	nsRes, ok := s.lookup(gvCore, "namespaces")
	if !ok {
		return errors.New("apiserver: namespaces are not served")
	}
	for _, name := range SystemNamespaces {
		ns := &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		}
		s.prepareForCreate(nsRes, ns)
		if _, err := s.store.Create(ctx, key(nsRes, "", name), ns); err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("apiserver: creating namespace %s: %w", name, err)
		}
		if err := s.ensureServiceAccount(ctx, name, "default"); err != nil {
			return fmt.Errorf("apiserver: %w", err)
		}
	}
	return nil
}
