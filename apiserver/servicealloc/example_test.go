package servicealloc_test

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver/servicealloc"
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
