package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
)

// The `kubernetes` service in `default`, through which pods reach the API
// server: cluster IP the first address of the service range (10.96.0.1),
// port 443 named https, targetPort the API server's port, and an Endpoints
// and EndpointSlices naming every live API server (Config.AdvertiseAddress
// and port of each, from their leases: kubernetesleases.go) —
// kube-apiserver's kubernetesservice controller and lease endpoint
// reconciler. The server writes them straight to the store (they are its
// own, like the system namespaces) at Bootstrap and then keeps them as
// they should be every Config.KubernetesServiceInterval and right after
// one is deleted.

// KubernetesServiceName is the name of the API server's service in
// metav1.NamespaceDefault.
const KubernetesServiceName = "kubernetes"

const kubernetesServicePort = 443

// RunControllers runs the API server's own controllers until ctx is done:
// the `kubernetes` service reconciler, the periodic repair of Service
// allocations, and the watches of the authorizer (when it is an
// authz.Runner) and of admission (Config.AdmissionWatches). Serve runs
// it; call it yourself when serving Handler() another way. A second
// concurrent call returns at once.
func (s *Server) RunControllers(ctx context.Context) {
	if !s.controllers.CompareAndSwap(false, true) {
		return
	}
	defer s.controllers.Store(false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.services.RunRepair(ctx, s.cfg.ServiceRepairInterval)
	}()
	defer func() { <-done }()
	waitAuthorizer := s.runAuthorizer(ctx)
	defer waitAuthorizer()
	waitAdmission := s.runAdmission(ctx)
	defer waitAdmission()
	tick := time.NewTicker(s.cfg.KubernetesServiceInterval)
	defer tick.Stop()
	defer func() {
		// Leave the endpoints on the way out, with a context of its own:
		// ctx is done.
		leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		s.leaveKubernetesEndpoints(leaveCtx)
	}()
	for {
		if err := s.ReconcileKubernetesService(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("reconciling the kubernetes service", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
		}
	}
}

// kickKubernetesService asks RunControllers to reconcile now.
func (s *Server) kickKubernetesService() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// isKubernetesServiceObject reports the `kubernetes` Service, Endpoints
// or EndpointSlice.
func isKubernetesServiceObject(res *Resource, obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.Service:
		return isServices(res) && o.Namespace == metav1.NamespaceDefault && o.Name == KubernetesServiceName
	case *corev1.Endpoints:
		return o.Namespace == metav1.NamespaceDefault && o.Name == KubernetesServiceName
	case *discoveryv1.EndpointSlice:
		return o.Namespace == metav1.NamespaceDefault && o.Labels[discoveryv1.LabelServiceName] == KubernetesServiceName
	}
	return false
}

// ReconcileKubernetesService renews this API server's lease and creates
// the `kubernetes` service, its Endpoints and its EndpointSlices, or puts
// them back as they should be: naming every API server whose lease is
// live. It does nothing until the API server's port is known
// (Config.AdvertisePort or Serve).
func (s *Server) ReconcileKubernetesService(ctx context.Context) error {
	port := int32(s.advertisePort.Load())
	if port == 0 {
		return nil
	}
	self := apiEndpoint{addr: s.cfg.AdvertiseAddress.Unmap(), port: port}
	if err := s.renewKubernetesLease(ctx, self); err != nil {
		return fmt.Errorf("renewing this API server's lease: %w", err)
	}
	live, err := s.liveAPIServers(ctx, self)
	if err != nil {
		return err
	}
	if err := s.ensureKubernetesService(ctx, port, live); err != nil {
		return fmt.Errorf("service %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	if err := s.ensureKubernetesEndpoints(ctx, live); err != nil {
		return fmt.Errorf("endpoints %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	if err := s.ensureKubernetesEndpointSlices(ctx, live); err != nil {
		return fmt.Errorf("endpointslices %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	return nil
}

func kubernetesServicePorts(port int32) []corev1.ServicePort {
	return []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: kubernetesServicePort, TargetPort: intstr.FromInt32(port)}}
}

// ensureKubernetesService creates the service with port as targetPort,
// or fixes it. A targetPort of any live API server is kept: API servers on
// different ports would otherwise take turns rewriting it (the endpoints'
// ports, matched by name, are what clients are sent to).
func (s *Server) ensureKubernetesService(ctx context.Context, port int32, live []apiEndpoint) error {
	res, ok := s.lookup(gvCore, "services")
	if !ok {
		return nil
	}
	k := key(res, metav1.NamespaceDefault, KubernetesServiceName)
	ip := s.services.IPs().First().String()
	cur, err := s.store.Get(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: KubernetesServiceName,
				Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
				Ports: kubernetesServicePorts(port), SessionAffinity: corev1.ServiceAffinityNone},
		}
		defaults.Service(svc)
		s.prepareForCreate(res, svc)
		alloc, err := s.services.Allocate(ctx, svc, false)
		if err != nil {
			return err
		}
		if _, err := s.store.Create(ctx, k, svc); err != nil {
			alloc.Revert()
			if errors.Is(err, storage.ErrExists) {
				return nil
			}
			return err
		}
		alloc.Commit()
		s.log.Info("created the kubernetes service", "clusterIP", ip, "targetPort", port)
		return nil
	}
	if err != nil {
		return err
	}
	if have := cur.(*corev1.Service); have.Spec.Type == corev1.ServiceTypeClusterIP &&
		slices.ContainsFunc(live, func(e apiEndpoint) bool {
			return equality.Semantic.DeepEqual(have.Spec.Ports, kubernetesServicePorts(e.port))
		}) {
		return nil
	}
	var alloc *servicealloc.Txn
	_, err = s.store.Update(ctx, k, func(obj runtime.Object) (runtime.Object, error) {
		alloc.Revert()
		alloc = nil
		old := obj.(*corev1.Service)
		svc := old.DeepCopy()
		svc.Spec.Type, svc.Spec.Ports, svc.Spec.ExternalName = corev1.ServiceTypeClusterIP, kubernetesServicePorts(port), ""
		s.prepareForUpdate(res, "", svc, old)
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
		}
		defaults.Service(svc)
		txn, err := s.services.Reallocate(ctx, svc, old, false)
		if err != nil {
			return nil, err
		}
		alloc = txn
		return svc, nil
	})
	if err != nil {
		alloc.Revert()
		return err
	}
	alloc.Commit()
	s.log.Info("reset the kubernetes service's ports", "targetPort", port)
	return nil
}

// ensureObject creates want, or lets fix correct the stored object (fix
// reports whether it changed anything).
func (s *Server) ensureObject(ctx context.Context, res *Resource, want runtime.Object, fix func(cur runtime.Object) bool) error {
	m, err := meta.Accessor(want)
	if err != nil {
		return err
	}
	k := key(res, m.GetNamespace(), m.GetName())
	cur, err := s.store.Get(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		s.prepareForCreate(res, want)
		if _, err := s.store.Create(ctx, k, want); err != nil && !errors.Is(err, storage.ErrExists) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !fix(cur.DeepCopyObject()) {
		return nil
	}
	_, err = s.store.Update(ctx, k, func(obj runtime.Object) (runtime.Object, error) {
		if !fix(obj) {
			return nil, errNoop{cur: obj}
		}
		return obj, nil
	})
	var noop errNoop
	if errors.As(err, &noop) {
		return nil
	}
	return err
}
