package dns_test

import (
	"fmt"
	"net"
	"testing"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// benchCluster: 1,000 ClusterIP Services and 100 headless Services with 10
// endpoints each, in 10 namespaces.
func benchCluster() []runtime.Object {
	var objs []runtime.Object
	for i := range 1000 {
		objs = append(objs, service(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("svc%d", i),
			fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), port("http", corev1.ProtocolTCP, 80)))
	}
	ports := []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)}
	for i := range 100 {
		ns, name := fmt.Sprintf("ns%d", i%10), fmt.Sprintf("hl%d", i)
		objs = append(objs, service(ns, name, corev1.ClusterIPNone, port("http", corev1.ProtocolTCP, 80)))
		var eps []ep
		for j := range 10 {
			eps = append(eps, ep{ip: fmt.Sprintf("10.244.%d.%d", i, j+1), host: fmt.Sprintf("%s-%d", name, j), ready: true})
		}
		objs = append(objs, slice(ns, name, name+"-x", discoveryv1.AddressTypeIPv4, ports, eps...))
	}
	return objs
}

var benchQuestions = []struct {
	name  string
	qtype uint16
}{
	{"svc42.ns2.svc.cluster.local.", mdns.TypeA},
	{"svc42.ns2.svc.cluster.local.", mdns.TypeAAAA},
	{"hl7.ns7.svc.cluster.local.", mdns.TypeA},
	{"_http._tcp.hl7.ns7.svc.cluster.local.", mdns.TypeSRV},
	{"svc42.ns2.svc.cluster.local.ns2.svc.cluster.local.", mdns.TypeA},
	{"10-244-1-1.ns2.pod.cluster.local.", mdns.TypeA},
}

// BenchmarkQueryUDP measures queries per second over UDP on 127.0.0.1,
// with parallel clients each on its own socket.
func BenchmarkQueryUDP(b *testing.B) {
	e := start(b, nil, benchCluster()...)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := (&mdns.Client{Net: "udp"}).Dial(e.addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		m := new(mdns.Msg)
		i := 0
		for pb.Next() {
			q := benchQuestions[i%len(benchQuestions)]
			i++
			m.SetQuestion(q.name, q.qtype)
			if err := conn.WriteMsg(m); err != nil {
				b.Error(err)
				return
			}
			if _, err := conn.ReadMsg(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

// BenchmarkServeDNS measures the resolution itself, without sockets.
func BenchmarkServeDNS(b *testing.B) {
	e := start(b, nil, benchCluster()...)
	w := &nullWriter{}
	msgs := make([]*mdns.Msg, len(benchQuestions))
	for i, q := range benchQuestions {
		msgs[i] = new(mdns.Msg)
		msgs[i].SetQuestion(q.name, q.qtype)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.srv.ServeDNS(w, msgs[i%len(msgs)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
}

type nullWriter struct{ mdns.ResponseWriter }

func (*nullWriter) WriteMsg(*mdns.Msg) error { return nil }
func (*nullWriter) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
}
