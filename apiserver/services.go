package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
)

// Service allocation: the REST handlers reserve a Service's cluster IP
// and node ports (servicealloc) after validation and before the write, and
// commit or revert the reservation with the write's outcome, as
// kube-apiserver's service storage does with its BeginCreate/BeginUpdate
// hooks. Every allocated value has a record in the store
// (servicealloc.StoreClaims: an IPAddress per cluster IP, a record per node
// port) whose creation is the allocation, so API servers sharing a store
// never hand out one value twice; the allocator loads and checks the
// records against the stored Services at the first allocation, and
// RunControllers repairs them periodically.

var servicesGR = schema.GroupResource{Resource: "services"}

// ServiceAllocator returns the allocator of cluster IPs and node ports.
func (s *Server) ServiceAllocator() *servicealloc.Allocator { return s.services }

// listServices reads every stored Service: the allocator's source of truth.
func (s *Server) listServices(ctx context.Context) ([]*corev1.Service, error) {
	var out []*corev1.Service
	opts := storage.ListOptions{ReadOnly: true, Limit: 1000}
	for {
		page, err := s.store.List(ctx, storage.Prefix(servicesGR), opts)
		if err != nil {
			return nil, fmt.Errorf("listing services: %w", err)
		}
		for _, obj := range page.Items {
			if svc, ok := obj.(*corev1.Service); ok {
				out = append(out, svc)
			}
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

func isServices(res *Resource) bool {
	return res.GroupVersion == gvCore && res.Resource == "services"
}

// allocateCreate reserves what a new Service needs; nil for other objects.
func (s *Server) allocateCreate(ctx context.Context, res *Resource, obj runtime.Object, dry bool) (*servicealloc.Txn, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || !isServices(res) {
		return nil, nil
	}
	return s.services.Allocate(ctx, svc, dry)
}

// allocateUpdate reserves what an updated Service newly needs and lists
// what it gives up; status updates never change allocations.
func (s *Server) allocateUpdate(ctx context.Context, res *Resource, sub string, obj, old runtime.Object, dry bool) (*servicealloc.Txn, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok || !isServices(res) || sub != "" {
		return nil, nil
	}
	return s.services.Reallocate(ctx, svc, old.(*corev1.Service), dry)
}

// afterDelete runs once an object is gone from the store: a Service's
// cluster IP and node ports are released, and the `kubernetes` service or
// its endpoints are recreated at once.
func (s *Server) afterDelete(res *Resource, obj runtime.Object) {
	if svc, ok := obj.(*corev1.Service); ok && isServices(res) {
		s.services.Release(svc)
	}
	if isKubernetesServiceObject(res, obj) {
		s.kickKubernetesService()
	}
}
