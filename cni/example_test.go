package cni_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/cni"
)

// The kubelet's use of the built-in bridge: attach a sandbox's network
// namespace, read the pod IP, detach at termination.
func ExampleNewBridge() {
	ctx := context.Background()
	br, err := cni.NewBridge(cni.BridgeConfig{
		PodCIDR:  netip.MustParsePrefix("10.244.1.0/24"), // Node.Spec.PodCIDR
		StateDir: "/var/lib/podkit",
	}, cni.WithIPForward(true), cni.WithMasquerade(true, ""))
	if err != nil {
		log.Fatal(err)
	}
	defer br.Close()
	a := &cni.Attachment{ContainerID: "9f86d081", NetNS: "/run/podkit/netns/9f86d081"}
	res, err := br.Setup(ctx, a)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pod IP", res.PodIPs()[0])
	if err := br.Teardown(ctx, a); err != nil {
		log.Fatal(err)
	}
}

// A ClusterFirst pod's resolv.conf and hosts file.
func ExampleResolvConf() {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
		Spec:       corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst, Subdomain: "web"},
	}
	node := cni.NodeDNS{
		ClusterDNS:    []netip.Addr{netip.MustParseAddr("10.96.0.10")},
		ClusterDomain: "cluster.local",
		Host:          &cni.ResolvConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"corp.example"}},
	}
	resolv, _, err := cni.ResolvConf(pod, node)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(resolv))
	hosts, err := cni.HostsFile(pod, []netip.Addr{netip.MustParseAddr("10.244.1.7")}, "cluster.local", nil)
	if err != nil {
		log.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(hosts)), "\n")
	fmt.Println(lines[len(lines)-1]) // after the localhost entries
	// Output:
	// search shop.svc.cluster.local svc.cluster.local cluster.local corp.example
	// nameserver 10.96.0.10
	// options ndots:5
	// 10.244.1.7	web-0.web.shop.svc.cluster.local	web-0
}
