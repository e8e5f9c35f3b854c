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
// and their default service accounts, and — once the server's port is
// known (Config.AdvertisePort) — the `kubernetes` service and its
// endpoints. It loads the Service allocations from the store first. It is
// idempotent, so a restarted server on a stored cluster changes nothing.
func (s *Server) Bootstrap(ctx context.Context) error {
	if err := s.services.Sync(ctx); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
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
	if err := s.publishRootCA(ctx); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	if err := s.ReconcileKubernetesService(ctx); err != nil {
		// RunControllers retries: a user's Service holding the first
		// address must not keep the API server from starting.
		s.log.Warn("creating the kubernetes service", "err", err)
	}
	return nil
}
