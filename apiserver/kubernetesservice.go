package apiserver

import (
	"context"
	"errors"
	"fmt"
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
// and an EndpointSlice naming Config.AdvertiseAddress — kube-apiserver's
// kubernetesservice controller and endpoint reconciler. The server writes
// them straight to the store (they are its own, like the system
// namespaces) at Bootstrap and then keeps them as they should be every
// Config.KubernetesServiceInterval and right after one is deleted.

// KubernetesServiceName is the name of the API server's service in
// metav1.NamespaceDefault.
const KubernetesServiceName = "kubernetes"

const kubernetesServicePort = 443

// RunControllers runs the API server's own controllers until ctx is done:
// the `kubernetes` service reconciler and the periodic repair of Service
// allocations. Serve runs it; call it yourself when serving Handler()
// another way. A second concurrent call returns at once.
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
	tick := time.NewTicker(s.cfg.KubernetesServiceInterval)
	defer tick.Stop()
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

// ReconcileKubernetesService creates the `kubernetes` service, its
// Endpoints and its EndpointSlice, or puts them back as they should be.
// It does nothing until the API server's port is known (Config.AdvertisePort
// or Serve).
func (s *Server) ReconcileKubernetesService(ctx context.Context) error {
	port := int32(s.advertisePort.Load())
	if port == 0 {
		return nil
	}
	if err := s.ensureKubernetesService(ctx, port); err != nil {
		return fmt.Errorf("service %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	if err := s.ensureKubernetesEndpoints(ctx, port); err != nil {
		return fmt.Errorf("endpoints %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	if err := s.ensureKubernetesEndpointSlice(ctx, port); err != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", metav1.NamespaceDefault, KubernetesServiceName, err)
	}
	return nil
}

func kubernetesServicePorts(port int32) []corev1.ServicePort {
	return []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: kubernetesServicePort, TargetPort: intstr.FromInt32(port)}}
}

func (s *Server) ensureKubernetesService(ctx context.Context, port int32) error {
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
		equality.Semantic.DeepEqual(have.Spec.Ports, kubernetesServicePorts(port)) {
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

func (s *Server) ensureKubernetesEndpoints(ctx context.Context, port int32) error {
	res, ok := s.lookup(gvCore, "endpoints")
	if !ok {
		return nil
	}
	want := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: KubernetesServiceName,
			Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: s.cfg.AdvertiseAddress.String()}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}},
		}},
	}
	return s.ensureObject(ctx, res, want, func(cur runtime.Object) bool {
		ep := cur.(*corev1.Endpoints)
		if equality.Semantic.DeepEqual(ep.Subsets, want.Subsets) && equality.Semantic.DeepEqual(ep.Labels, want.Labels) {
			return false
		}
		ep.Subsets, ep.Labels = want.Subsets, want.Labels
		return true
	})
}

func (s *Server) ensureKubernetesEndpointSlice(ctx context.Context, port int32) error {
	res, ok := s.lookup(gvDiscovery, "endpointslices")
	if !ok {
		return nil
	}
	addressType := discoveryv1.AddressTypeIPv4
	if s.cfg.AdvertiseAddress.Is6() {
		addressType = discoveryv1.AddressTypeIPv6
	}
	name, proto, ready := "https", corev1.ProtocolTCP, true
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: KubernetesServiceName,
			Labels: map[string]string{discoveryv1.LabelServiceName: KubernetesServiceName}},
		AddressType: addressType,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{s.cfg.AdvertiseAddress.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	// Other slices labelled for the service (a family left behind) go.
	list, err := s.store.List(ctx, key(res, metav1.NamespaceDefault, ""), storage.ListOptions{Predicate: func(obj runtime.Object) bool {
		es, ok := obj.(*discoveryv1.EndpointSlice)
		return ok && es.Labels[discoveryv1.LabelServiceName] == KubernetesServiceName &&
			(es.Name != KubernetesServiceName || es.AddressType != addressType)
	}})
	if err != nil {
		return err
	}
	for _, obj := range list.Items {
		es := obj.(*discoveryv1.EndpointSlice)
		if _, err := s.store.Delete(ctx, key(res, es.Namespace, es.Name), nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return s.ensureObject(ctx, res, want, func(cur runtime.Object) bool {
		es := cur.(*discoveryv1.EndpointSlice)
		if equality.Semantic.DeepEqual(es.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(es.Ports, want.Ports) &&
			equality.Semantic.DeepEqual(es.Labels, want.Labels) {
			return false
		}
		es.Endpoints, es.Ports, es.Labels = want.Endpoints, want.Ports, want.Labels
		return true
	})
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
