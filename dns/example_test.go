package dns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podkit/podkit/dns"
)

// Example serves the cluster zone from a clientset's Services and asks it
// for a Service's address, as a pod's resolver would.
func Example() {
	client := fake.NewClientset(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"}},
	})
	srv, err := dns.New(dns.Config{
		Client: client,
		Addr:   "127.0.0.1:0", // "10.96.0.10:53" on a node, or ListenIn a namespace
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	<-srv.Ready()

	m := new(mdns.Msg)
	m.SetQuestion("web.default.svc.cluster.local.", mdns.TypeA)
	resp, _, err := new(mdns.Client).Exchange(m, srv.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Answer[0])

	m.SetQuestion("web.default.svc.cluster.local.default.svc.cluster.local.", mdns.TypeA)
	resp, _, _ = new(mdns.Client).Exchange(m, srv.Addr().String())
	fmt.Println(mdns.RcodeToString[resp.Rcode])

	cancel()
	fmt.Println(<-done)
	// Output:
	// web.default.svc.cluster.local.	5	IN	A	10.96.0.20
	// NXDOMAIN
	// <nil>
}
