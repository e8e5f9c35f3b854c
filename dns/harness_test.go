package dns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podkit/podkit/dns"
)

// env is a running server over a fake clientset.
type env struct {
	cs   *fake.Clientset
	srv  *dns.Server
	addr string
}

// start runs a server over objs until the test ends. It returns once the
// caches synced and both watches are established, so later writes to cs
// reach the server.
func start(t testing.TB, mutate func(*dns.Config), objs ...runtime.Object) *env {
	t.Helper()
	cfg := dns.Config{Addr: "127.0.0.1:0"}
	if mutate != nil {
		mutate(&cfg)
	}
	return startWith(t, cfg, objs...)
}

// startWith is start with a Config whose Client and Logger it fills in.
func startWith(t testing.TB, cfg dns.Config, objs ...runtime.Object) *env {
	t.Helper()
	cs := fake.NewClientset(objs...)
	watching := make(chan string, 8)
	cs.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		watching <- a.GetResource().Resource
		return true, w, nil
	})
	cfg.Client = cs
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := dns.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("server stopped before ready: %v", err)
	}
	for range 2 {
		<-watching
	}
	return &env{cs: cs, srv: srv, addr: srv.Addr().String()}
}

func (e *env) exchange(t testing.TB, m *mdns.Msg, net string) *mdns.Msg {
	t.Helper()
	c := &mdns.Client{Net: net, Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(m, e.addr)
	require.NoError(t, err, "query %s over %s", m.Question[0].String(), net)
	return resp
}

// query asks name/qtype over UDP.
func (e *env) query(t testing.TB, name string, qtype uint16) *mdns.Msg {
	t.Helper()
	m := new(mdns.Msg)
	m.SetQuestion(name, qtype)
	return e.exchange(t, m, "udp")
}

// eventually polls name/qtype until check accepts the answer: informer
// events arrive asynchronously. The deadline only bounds a broken test.
func (e *env) eventually(t testing.TB, name string, qtype uint16, check func(*mdns.Msg) bool) *mdns.Msg {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := e.query(t, name, qtype)
		if check(resp) {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("answer for %s %s never matched; last:\n%s", name, mdns.TypeToString[qtype], resp)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rdata lists the answer section's record data ("10.96.0.20", "0 100 80
// web.default.svc.cluster.local.").
func rdata(rrs []mdns.RR) []string {
	out := []string{}
	for _, rr := range rrs {
		out = append(out, strings.TrimPrefix(rr.String(), rr.Header().String()))
	}
	return out
}

func hasSOA(m *mdns.Msg) bool {
	return len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == mdns.TypeSOA
}

// Object builders.

func service(ns, name, clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, Ports: ports},
	}
	if clusterIP != "" && clusterIP != corev1.ClusterIPNone {
		svc.Spec.ClusterIPs = strings.Split(clusterIP, ",")
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	return svc
}

func port(name string, proto corev1.Protocol, n int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Protocol: proto, Port: n}
}

func externalName(ns, name, target string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
}

type ep struct {
	ip, host string
	ready    bool
}

func slice(ns, svc, name string, at discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...ep) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: at,
		Ports:       ports,
	}
	for _, e := range eps {
		ready := e.ready
		x := discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
		if e.host != "" {
			h := e.host
			x.Hostname = &h
		}
		es.Endpoints = append(es.Endpoints, x)
	}
	return es
}

func slicePort(name string, proto corev1.Protocol, n int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &n}
}

// bigSlice holds n ready endpoints 10.245.<i/250>.<i%250+1>.
func bigSlice(ns, svc string, n int) *discoveryv1.EndpointSlice {
	var eps []ep
	for i := range n {
		eps = append(eps, ep{ip: fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), ready: true})
	}
	return slice(ns, svc, svc+"-1", discoveryv1.AddressTypeIPv4, nil, eps...)
}

// upstream runs a miekg/dns server on 127.0.0.1 (UDP and TCP) answering
// from records ("name type" → rdata lines) and NXDOMAIN otherwise; it
// counts the questions it got.
type upstream struct {
	addr string
	got  chan string
}

func startUpstream(t testing.TB, records map[string][]string) *upstream {
	t.Helper()
	socks, err := dns.Listen(context.Background(), "127.0.0.1:0")
	require.NoError(t, err)
	u := &upstream{addr: socks.Addr().String(), got: make(chan string, 1024)}
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		q := r.Question[0]
		key := strings.ToLower(q.Name) + " " + mdns.TypeToString[q.Qtype]
		select {
		case u.got <- key:
		default:
		}
		m := new(mdns.Msg)
		m.SetReply(r)
		lines, ok := records[key]
		if !ok {
			m.Rcode = mdns.RcodeNameError
		}
		for _, l := range lines {
			rr, err := mdns.NewRR(q.Name + " 60 IN " + mdns.TypeToString[q.Qtype] + " " + l)
			if err == nil {
				m.Answer = append(m.Answer, rr)
			}
		}
		_ = w.WriteMsg(m)
	})
	udp := &mdns.Server{PacketConn: socks.UDP, Handler: h}
	tcp := &mdns.Server{Listener: socks.TCP, Handler: h}
	for _, s := range []*mdns.Server{udp, tcp} {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		go func() { _ = s.ActivateAndServe() }()
		<-started
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return u
}
