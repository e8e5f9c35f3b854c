package servicealloc_test

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func Example() {
	ctx := context.Background()
	stored := []*corev1.Service{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.1"}},
	}}
	a, err := servicealloc.New(servicealloc.Config{
		ClusterIPRange: netip.MustParsePrefix("10.96.0.0/12"),
		List:           func(context.Context) ([]*corev1.Service, error) { return stored, nil },
	})
	if err != nil {
		panic(err)
	}
	dns := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10"},
	}
	txn, err := a.Allocate(ctx, dns, false) // loads the stored services first
	if err != nil {
		panic(err)
	}
	// ... store dns; on failure txn.Revert() instead.
	txn.Commit()
	fmt.Println(dns.Spec.ClusterIPs, dns.Spec.IPFamilies, *dns.Spec.IPFamilyPolicy)

	taken := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1"},
	}
	_, err = a.Allocate(ctx, taken, false)
	fmt.Println(err)
	// Output:
	// [10.96.0.10] [IPv4] SingleStack
	// Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated
}

// ExampleNewStoreClaims: two API servers' allocators on one store. The
// second has never heard of the first's allocation; the record in the
// store refuses it all the same.
func ExampleNewStoreClaims() {
	ctx := context.Background()
	st := memory.New() // etcd for API servers on several machines
	defer st.Close()
	newAllocator := func() *servicealloc.Allocator {
		a, err := servicealloc.New(servicealloc.Config{Claims: servicealloc.NewStoreClaims(st, nil)})
		if err != nil {
			panic(err)
		}
		return a
	}
	first, second := newAllocator(), newAllocator()
	web := func(name string) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.100.1"},
		}
	}
	txn, err := first.Allocate(ctx, web("web"), false)
	if err != nil {
		panic(err)
	}
	txn.Commit()
	_, err = second.Allocate(ctx, web("web2"), false)
	fmt.Println(err)
	// Output:
	// Service "web2" is invalid: spec.clusterIPs: Invalid value: ["10.96.100.1"]: failed to allocate IP 10.96.100.1: provided IP is already allocated
}
