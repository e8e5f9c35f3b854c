package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			Selector:              map[string]string{"app": "web"},
			Ports:                 []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
			ClusterIP:             "10.96.0.10",
			ClusterIPs:            []string{"10.96.0.10"},
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:        ptr(corev1.IPFamilyPolicySingleStack),
			SessionAffinity:       corev1.ServiceAffinityNone,
			InternalTrafficPolicy: ptr(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
}

func nodePortService() *corev1.Service {
	s := validService()
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s.Spec.Ports[0].NodePort = 30080
	return s
}

func TestServiceCreate(t *testing.T) {
	cases := []struct {
		name string
		svc  func() *corev1.Service
		mut  func(s *corev1.Service)
		want []want
	}{
		{"valid", validService, func(*corev1.Service) {}, nil},
		{"clusterIP only, clusterIPs synced here", validService, func(s *corev1.Service) { s.Spec.ClusterIPs = nil }, nil},
		{"no ports", validService, func(s *corev1.Service) { s.Spec.Ports = nil }, []want{req("spec.ports")}},
		{"headless without ports", validService, func(s *corev1.Service) {
			s.Spec.Ports, s.Spec.ClusterIP, s.Spec.ClusterIPs = nil, "None", []string{"None"}
		}, nil},
		{"two ports need names", validService, func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP})
		}, []want{req("spec.ports[0].name"), req("spec.ports[1].name")}},
		{"duplicate port names", validService, func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP},
				{Name: "a", Port: 81, TargetPort: intstr.FromInt32(81), Protocol: corev1.ProtocolTCP}}
		}, []want{dup("spec.ports[1].name")}},
		{"duplicate port and protocol", validService, func(s *corev1.Service) {
			s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80, TargetPort: intstr.FromInt32(80), Protocol: corev1.ProtocolTCP},
				{Name: "b", Port: 80, TargetPort: intstr.FromInt32(81), Protocol: corev1.ProtocolTCP}}
		}, []want{dup("spec.ports[1]")}},
		{"port out of range", validService, func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 }, []want{inv("spec.ports[0].port", "between 1 and 65535")}},
		{"protocol", validService, func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }, []want{notSup("spec.ports[0].protocol")}},
		{"targetPort name", validService, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("HTTP_") }, []want{
			inv("spec.ports[0].targetPort", "at least one letter"), inv("spec.ports[0].targetPort", "alpha-numeric")}},
		{"targetPort named ok", validService, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") }, nil},
		{"nodePort on ClusterIP", validService, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, []want{forb("spec.ports[0].nodePort", "may not be used when `type` is 'ClusterIP'")}},
		{"nodePort ok", nodePortService, func(*corev1.Service) {}, nil},
		{"nodePort outside range", nodePortService, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 8080 },
			[]want{inv("spec.ports[0].nodePort", "The range of valid ports is 30000-32767")}},
		{"NodePort needs externalTrafficPolicy", nodePortService, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = "" }, []want{req("spec.externalTrafficPolicy")}},
		{"externalTrafficPolicy on ClusterIP", validService, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal },
			[]want{inv("spec.externalTrafficPolicy", "externally-accessible")}},
		{"type unknown", validService, func(s *corev1.Service) { s.Spec.Type = "Mesh" }, []want{notSup("spec.type")}},
		{"clusterIP invalid", validService, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.300", []string{"10.96.0.300"} },
			[]want{inv("spec.clusterIPs[0]", "")}},
		{"clusterIPs mismatch", validService, func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.11"} },
			[]want{inv("spec.clusterIPs", "first value must match `clusterIP`")}},
		{"clusterIP family mismatch", validService, func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
			[]want{inv("spec.clusterIPs[0]", "expected an IPv6 value")}},
		{"headless NodePort", nodePortService, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} },
			[]want{inv("spec.clusterIPs[0]", "may not be set to 'None' for NodePort services")}},
		{"selector labels", validService, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} }, []want{inv("spec.selector", "")}},
		{"sessionAffinity unknown", validService, func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" }, []want{notSup("spec.sessionAffinity")}},
		{"sessionAffinity ClientIP needs config", validService, func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
			[]want{req("spec.sessionAffinityConfig")}},
		{"sessionAffinity ClientIP ok", validService, func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(10800))}}
		}, nil},
		{"internalTrafficPolicy required", validService, func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = nil }, []want{req("spec.internalTrafficPolicy")}},
		{"externalIPs loopback", validService, func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} },
			[]want{inv("spec.externalIPs[0]", "loopback")}},
		{"ExternalName", validService, func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com.", SessionAffinity: corev1.ServiceAffinityNone}
		}, nil},
		{"ExternalName needs name and no IPs", validService, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.Ports = corev1.ServiceTypeExternalName, nil
		}, []want{req("spec.externalName"), forb("spec.clusterIPs", "ExternalName"), forb("spec.ipFamilies", "ExternalName"), forb("spec.ipFamilyPolicy", "ExternalName")}},
		{"ExternalName bad DNS", validService, func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "Bad_Host", SessionAffinity: corev1.ServiceAffinityNone}
		}, []want{inv("spec.externalName", "RFC 1123 subdomain")}},
		{"LoadBalancer", validService, func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalTrafficPolicy = corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.AllocateLoadBalancerNodePorts = ptr(true)
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", " 192.168.0.0/16"}
		}, nil},
		{"source ranges only for LB", validService, func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} },
			[]want{forb("spec.LoadBalancerSourceRanges", "LoadBalancer")}},
		{"trafficDistribution", validService, func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr("Anywhere") }, []want{notSup("spec.trafficDistribution")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.svc()
			tc.mut(s)
			expectErrors(t, v.ValidateCreate(s), tc.want...)
		})
	}
}

func TestServiceNodePortRangeOption(t *testing.T) {
	v, err := New(WithNodePortRange(8000, 100))
	if err != nil {
		t.Fatal(err)
	}
	s := nodePortService()
	s.Spec.Ports[0].NodePort = 8050
	expectErrors(t, v.ValidateCreate(s))
	s.Spec.Ports[0].NodePort = 30080
	expectErrors(t, v.ValidateCreate(s), inv("spec.ports[0].nodePort", "8000-8099"))
	v, err = New(WithNodePortRange(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	expectErrors(t, v.ValidateCreate(s))
	if _, err := New(WithNodePortRange(65000, 1000)); err == nil {
		t.Fatal("range past 65535 accepted")
	}
}

func TestServiceUpdate(t *testing.T) {
	cases := []struct {
		name string
		old  func(s *corev1.Service)
		mut  func(s *corev1.Service)
		want []want
	}{
		{"selector changes", nil, func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "v2"} }, nil},
		{"clusterIP change", nil, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"} },
			[]want{inv("spec.clusterIPs[0]", "may not change once set")}},
		{"clusterIP unset", nil, func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil },
			[]want{inv("spec.clusterIPs[0]", "primary clusterIP can not be unset")}},
		{"add secondary IP", nil, func(s *corev1.Service) {
			s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyPreferDualStack)
		}, nil},
		{"drop secondary needs SingleStack", func(s *corev1.Service) {
			s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyPreferDualStack)
		}, func(s *corev1.Service) {
			s.Spec.ClusterIPs = []string{"10.96.0.10"}
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}, []want{inv("spec.ipFamilyPolicy", "when releasing the secondary clusterIP"), inv("spec.ipFamilyPolicy", "when releasing the secondary ipFamily")}},
		{"to ExternalName clears IPs", nil, func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", SessionAffinity: corev1.ServiceAffinityNone}
		}, nil},
		{"headless stays headless", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} },
			func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.12", []string{"10.96.0.12"} },
			[]want{inv("spec.clusterIPs[0]", "may not change once set")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validService()
			old.ObjectMeta = storedMeta(old.ObjectMeta)
			if tc.old != nil {
				tc.old(old)
			}
			s := old.DeepCopy()
			tc.mut(s)
			expectErrors(t, v.ValidateUpdate(s, old), tc.want...)
		})
	}
}

func TestServiceStatusUpdate(t *testing.T) {
	old := validService()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	s := old.DeepCopy()
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}}
	expectErrors(t, Default().ValidateStatusUpdate(s, old), forb("status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'"))
	old.Spec.Type = corev1.ServiceTypeLoadBalancer
	old.Spec.AllocateLoadBalancerNodePorts = ptr(true)
	old.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s = old.DeepCopy()
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "1.2.3.4"}, {Hostname: "10.0.0.1"}}
	expectErrors(t, Default().ValidateStatusUpdate(s, old), inv("status.loadBalancer.ingress[1].hostname", "not an IP address"))
}

func TestEndpoints(t *testing.T) {
	ep := func(ss ...corev1.EndpointSubset) *corev1.Endpoints {
		return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Subsets: ss}
	}
	v := Default()
	expectErrors(t, v.ValidateCreate(ep(corev1.EndpointSubset{
		Addresses:         []corev1.EndpointAddress{{IP: "10.1.0.5", Hostname: "web-0", NodeName: ptr("node-1")}},
		NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.1.0.6"}},
		Ports:             []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}, {Name: "https", Port: 8443, Protocol: corev1.ProtocolTCP}},
	})))
	expectErrors(t, v.ValidateCreate(ep(corev1.EndpointSubset{
		Addresses: []corev1.EndpointAddress{{IP: "not-an-ip"}, {IP: "127.0.0.1"}, {IP: "169.254.1.1"}},
		Ports:     []corev1.EndpointPort{{Port: 0, Protocol: "X"}, {Port: 1, Protocol: corev1.ProtocolUDP}},
	}, corev1.EndpointSubset{})),
		inv("subsets[0].addresses[0].ip", ""), inv("subsets[0].addresses[1].ip", "loopback"), inv("subsets[0].addresses[2].ip", "link-local"),
		req("subsets[0].ports[0].name"), inv("subsets[0].ports[0].port", ""), notSup("subsets[0].ports[0].protocol"), req("subsets[0].ports[1].name"),
		req("subsets[1]"))
}

func TestEndpointSlice(t *testing.T) {
	slice := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.5"}, NodeName: ptr("node-1"), Hostname: ptr("web-0")}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
		}
	}
	cases := []struct {
		name string
		mut  func(s *discoveryv1.EndpointSlice)
		want []want
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, nil},
		{"addressType required", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, []want{req("addressType")}},
		{"addressType unknown", func(s *discoveryv1.EndpointSlice) { s.AddressType = "MAC" }, []want{notSup("addressType")}},
		{"IPv6 address in IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::1"} },
			[]want{inv("endpoints[0].addresses[0]", "IPv4")}},
		{"IPv6 slice", func(s *discoveryv1.EndpointSlice) {
			s.AddressType, s.Endpoints[0].Addresses = discoveryv1.AddressTypeIPv6, []string{"fd00::1"}
		}, nil},
		{"FQDN slice", func(s *discoveryv1.EndpointSlice) {
			s.AddressType, s.Endpoints[0].Addresses = discoveryv1.AddressTypeFQDN, []string{"db.example.com"}
		}, nil},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, []want{req("endpoints[0].addresses")}},
		{"too many addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = make([]string, 101) }, nil},
		{"port name and protocol", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr("http")}, discoveryv1.EndpointPort{Name: ptr("Bad_Name"), Protocol: ptr(corev1.Protocol("X"))})
		}, []want{dup("ports[1].name"), req("ports[1].protocol"), inv("ports[2].name", ""), notSup("ports[2].protocol")}},
		{"nil port name allowed once", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = nil }, nil},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := slice()
			tc.mut(s)
			errs := v.ValidateCreate(s)
			if tc.name == "too many addresses" {
				if len(errs) == 0 || errs[0].Type != "FieldValueTooMany" {
					t.Fatalf("want TooMany first, got %v", errs)
				}
				return
			}
			expectErrors(t, errs, tc.want...)
		})
	}
	old := slice()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	s := old.DeepCopy()
	s.AddressType, s.Endpoints[0].Addresses = discoveryv1.AddressTypeIPv6, []string{"fd00::1"}
	expectErrors(t, v.ValidateUpdate(s, old), inv("addressType", "field is immutable"))
}
