package printers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestServiceCells(t *testing.T) {
	tcp := func(port, nodePort int32) corev1.ServicePort {
		return corev1.ServicePort{Port: port, NodePort: nodePort, Protocol: corev1.ProtocolTCP}
	}
	lb := func(points ...corev1.LoadBalancerIngress) corev1.ServiceStatus {
		return corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: points}}
	}
	tests := []struct {
		name   string
		spec   corev1.ServiceSpec
		status corev1.ServiceStatus
		want   []any // TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S)
	}{
		{"cluster IP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.10", "fd00::10"}, Ports: []corev1.ServicePort{tcp(80, 0), {Port: 53, Protocol: corev1.ProtocolUDP}}},
			corev1.ServiceStatus{}, []any{"ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP"}},
		{"cluster IP with external IPs", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"10.96.0.11"}, ExternalIPs: []string{"198.51.100.1", "198.51.100.2"}, Ports: []corev1.ServicePort{tcp(443, 0)}},
			corev1.ServiceStatus{}, []any{"ClusterIP", "10.96.0.11", "198.51.100.1,198.51.100.2", "443/TCP"}},
		{"headless without ports", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None", ClusterIPs: []string{"None"}},
			corev1.ServiceStatus{}, []any{"ClusterIP", "None", "<none>", "<none>"}},
		{"no cluster IPs yet", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{tcp(80, 0)}},
			corev1.ServiceStatus{}, []any{"ClusterIP", "<none>", "<none>", "80/TCP"}},
		{"node port", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.12"}, Ports: []corev1.ServicePort{tcp(80, 30080), tcp(443, 30443)}},
			corev1.ServiceStatus{}, []any{"NodePort", "10.96.0.12", "<none>", "80:30080/TCP,443:30443/TCP"}},
		{"load balancer pending", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.13"}, Ports: []corev1.ServicePort{tcp(80, 31000)}},
			corev1.ServiceStatus{}, []any{"LoadBalancer", "10.96.0.13", "<pending>", "80:31000/TCP"}},
		{"load balancer ingress, sorted and distinct, never clipped", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.14"}, Ports: []corev1.ServicePort{tcp(80, 31001)}},
			lb(corev1.LoadBalancerIngress{Hostname: "lb.example.com"}, corev1.LoadBalancerIngress{IP: "203.0.113.20"}, corev1.LoadBalancerIngress{IP: "203.0.113.20"}),
			[]any{"LoadBalancer", "10.96.0.14", "203.0.113.20,lb.example.com", "80:31001/TCP"}},
		{"load balancer ingress and external IPs", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.15"}, ExternalIPs: []string{"198.51.100.9"}, Ports: []corev1.ServicePort{tcp(80, 31002)}},
			lb(corev1.LoadBalancerIngress{IP: "203.0.113.21"}),
			[]any{"LoadBalancer", "10.96.0.15", "203.0.113.21,198.51.100.9", "80:31002/TCP"}},
		{"load balancer pending with external IPs", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.96.0.16"}, ExternalIPs: []string{"198.51.100.9"}, Ports: []corev1.ServicePort{tcp(80, 31003)}},
			corev1.ServiceStatus{}, []any{"LoadBalancer", "10.96.0.16", "198.51.100.9", "80:31003/TCP"}},
		{"external name", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			corev1.ServiceStatus{}, []any{"ExternalName", "<none>", "db.example.com", "<none>"}},
		{"type not set", corev1.ServiceSpec{ClusterIPs: []string{"10.96.0.17"}},
			corev1.ServiceStatus{}, []any{"", "10.96.0.17", "<unknown>", "<none>"}},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: objMeta("svc", 5*time.Second), Spec: tt.spec, Status: tt.status}
			cells := cellsOf(t, p, svc)
			assert.Equal(t, "svc", cells[0])
			assert.Equal(t, tt.want, cells[1:5])
			assert.Equal(t, "5s", cells[5])
			assert.Equal(t, "<none>", cells[6], "no selector")
		})
	}

	svc := &corev1.Service{ObjectMeta: objMeta("web", time.Hour), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web", "tier": "front"}}}
	assert.Equal(t, "app=web,tier=front", cellsOf(t, p, svc)[6])
	assert.Equal(t, []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "+Selector"}, columnNames(p.ColumnDefinitions(svc)))
}

func TestLoadBalancerIngressClipping(t *testing.T) {
	s := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.100"}, {IP: "203.0.113.101"}}}
	assert.Equal(t, "203.0.113.100...", loadBalancerIngress(s, false))
	assert.Equal(t, "203.0.113.100,203.0.113.101", loadBalancerIngress(s, true))
}

func TestEndpointsCells(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		out := make([]corev1.EndpointAddress, len(ips))
		for i, ip := range ips {
			out[i].IP = ip
		}
		return out
	}
	tests := []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"no subsets", nil, "<none>"},
		{"two addresses one port", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 8080}}}}, "10.0.0.1:8080,10.0.0.2:8080"},
		{"more than three", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 2 more..."},
		{"each port counts", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2"), Ports: []corev1.EndpointPort{{Port: 80}, {Port: 443}}}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."},
		{"headless without ports", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2")}}, "10.0.0.1,10.0.0.2"},
		{"IPv6", []corev1.EndpointSubset{{Addresses: addrs("fd00::1"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "[fd00::1]:80"},
		{"subset without ready addresses", []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.9"), Ports: []corev1.EndpointPort{{Port: 80}}}}, ""},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := &corev1.Endpoints{ObjectMeta: objMeta("web", 2*time.Minute), Subsets: tt.subsets}
			assert.Equal(t, []any{"web", tt.want, "2m"}, cellsOf(t, p, ep))
		})
	}
}

func TestEndpointSliceCells(t *testing.T) {
	ep := func(addrs ...string) discoveryv1.Endpoint { return discoveryv1.Endpoint{Addresses: addrs} }
	tests := []struct {
		name      string
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
		wantPorts string
		wantEPs   string
	}{
		{"empty", nil, nil, "<unset>", "<unset>"},
		{"ports and endpoints", []discoveryv1.EndpointPort{{Port: ptr(int32(80))}, {Port: ptr(int32(443))}}, []discoveryv1.Endpoint{ep("10.0.0.1"), ep("10.0.0.2")}, "80,443", "10.0.0.1,10.0.0.2"},
		{"named and wildcard ports", []discoveryv1.EndpointPort{{Name: ptr("http")}, {}}, []discoveryv1.Endpoint{ep("10.0.0.1")}, "http,*", "10.0.0.1"},
		{"more than three", []discoveryv1.EndpointPort{{Port: ptr(int32(1))}, {Port: ptr(int32(2))}, {Port: ptr(int32(3))}, {Port: ptr(int32(4))}},
			[]discoveryv1.Endpoint{ep("10.0.0.1", "10.0.0.2"), ep("10.0.0.3"), ep("10.0.0.4"), ep("10.0.0.5")}, "1,2,3 + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more..."},
	}
	p := newTestPrinter(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es := &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-abc", time.Hour), AddressType: discoveryv1.AddressTypeIPv4, Ports: tt.ports, Endpoints: tt.endpoints}
			assert.Equal(t, []any{"web-abc", "IPv4", tt.wantPorts, tt.wantEPs, "60m"}, cellsOf(t, p, es))
		})
	}
}
