package servicealloc

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

var v4 = []corev1.IPFamily{corev1.IPv4Protocol}

func TestAllocateCreate(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		wantErr string // the API error's message
		check   func(t *testing.T, s *corev1.Service, a *Allocator)
	}{
		{
			name: "cluster IP from the upper band, families filled",
			svc:  svc("web", corev1.ServiceTypeClusterIP),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				ip := mustAddr(s.Spec.ClusterIP)
				assert.Equal(t, []string{s.Spec.ClusterIP}, s.Spec.ClusterIPs)
				assert.True(t, a.IPs().Contains(ip))
				assert.False(t, ip.Less(mustAddr("10.96.1.1")), "dynamic allocation prefers the upper band, got %s", ip)
				assert.Equal(t, v4, s.Spec.IPFamilies)
				assert.Equal(t, corev1.IPFamilyPolicySingleStack, *s.Spec.IPFamilyPolicy)
				assert.Zero(t, s.Spec.Ports[0].NodePort)
				assert.True(t, a.IPs().Has(ip))
			},
		},
		{
			name: "explicit cluster IP in the static band",
			svc:  svc("dns", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.10")),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, "10.96.0.10", s.Spec.ClusterIP)
				assert.True(t, a.IPs().Has(mustAddr("10.96.0.10")))
			},
		},
		{
			name: "singular clusterIP only (old client)",
			svc: svc("old", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.ClusterIP = "10.96.0.11"
			}),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, []string{"10.96.0.11"}, s.Spec.ClusterIPs)
				assert.True(t, a.IPs().Has(mustAddr("10.96.0.11")))
			},
		},
		{
			name:    "explicit cluster IP out of range",
			svc:     svc("out", corev1.ServiceTypeClusterIP, withClusterIP("10.0.0.1")),
			wantErr: `Service "out" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12`,
		},
		{
			name:    "explicit cluster IP already allocated",
			svc:     svc("taken", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.1")),
			wantErr: `Service "taken" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: failed to allocate IP 10.96.0.1: provided IP is already allocated`,
		},
		{
			name: "headless: no cluster IP",
			svc:  svc("db", corev1.ServiceTypeClusterIP, withClusterIP(corev1.ClusterIPNone)),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, []string{"None"}, s.Spec.ClusterIPs)
				assert.Equal(t, v4, s.Spec.IPFamilies)
				assert.Equal(t, 1, a.IPs().Used(), "only the pre-allocated 10.96.0.1")
			},
		},
		{
			name: "headless without selector: both families, RequireDualStack",
			svc: svc("ext", corev1.ServiceTypeClusterIP, withClusterIP(corev1.ClusterIPNone), func(s *corev1.Service) {
				s.Spec.Selector = nil
			}),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, corev1.IPFamilyPolicyRequireDualStack, *s.Spec.IPFamilyPolicy)
				assert.Equal(t, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, s.Spec.IPFamilies)
			},
		},
		{
			name: "ExternalName: nothing",
			svc:  svc("cname", corev1.ServiceTypeExternalName),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Empty(t, s.Spec.ClusterIPs)
				assert.Nil(t, s.Spec.IPFamilyPolicy)
				assert.Empty(t, s.Spec.IPFamilies)
			},
		},
		{
			name: "NodePort: dynamic ports from the upper band, TCP and UDP of one port share",
			svc: svc("np", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
					{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
				}
			}),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				p := s.Spec.Ports
				assert.Equal(t, p[0].NodePort, p[1].NodePort)
				assert.NotEqual(t, p[0].NodePort, p[2].NodePort)
				for _, sp := range p {
					assert.GreaterOrEqual(t, sp.NodePort, int32(30000+86), "dynamic node ports come from the upper band")
					assert.LessOrEqual(t, sp.NodePort, int32(32767))
				}
				assert.Equal(t, 1+2, a.Ports().Used(), "30001 and the two new ones")
			},
		},
		{
			name: "NodePort: explicit port",
			svc:  svc("np2", corev1.ServiceTypeNodePort, withNodePorts(30080)),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, int32(30080), s.Spec.Ports[0].NodePort)
				assert.True(t, a.Ports().Has(30080))
			},
		},
		{
			name:    "NodePort: explicit port taken",
			svc:     svc("np3", corev1.ServiceTypeNodePort, withNodePorts(30001)),
			wantErr: `Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated`,
		},
		{
			name:    "NodePort: explicit port out of range",
			svc:     svc("np4", corev1.ServiceTypeNodePort, withNodePorts(8080)),
			wantErr: `Service "np4" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767`,
		},
		{
			name: "LoadBalancer without node ports, Local: health check port only",
			svc: svc("lb", corev1.ServiceTypeLoadBalancer, func(s *corev1.Service) {
				s.Spec.AllocateLoadBalancerNodePorts = ptr(false)
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Zero(t, s.Spec.Ports[0].NodePort)
				assert.NotZero(t, s.Spec.HealthCheckNodePort)
				assert.True(t, a.Ports().Has(int(s.Spec.HealthCheckNodePort)))
			},
		},
		{
			name: "IPv6 family on an IPv4 cluster",
			svc: svc("v6", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			}),
			wantErr: `Service "v6" is invalid: spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`,
		},
		{
			name:    "IPv6 cluster IP on an IPv4 cluster",
			svc:     svc("v6ip", corev1.ServiceTypeClusterIP, withClusterIP("fd00::1")),
			wantErr: `Service "v6ip" is invalid: spec.clusterIPs[0]: Invalid value: ["fd00::1"]: IPv6 is not configured on this cluster`,
		},
		{
			name: "RequireDualStack on a single-stack cluster",
			svc: svc("dual", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyRequireDualStack)
			}),
			wantErr: `Service "dual" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`,
		},
		{
			name: "PreferDualStack stays single",
			svc: svc("prefer", corev1.ServiceTypeClusterIP, func(s *corev1.Service) {
				s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyPreferDualStack)
			}),
			check: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, v4, s.Spec.IPFamilies)
				assert.Len(t, s.Spec.ClusterIPs, 1)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, nil)
			require.NoError(t, a.IPs().Allocate(mustAddr("10.96.0.1")))
			require.NoError(t, a.Ports().Allocate(30001))
			usedIPs, usedPorts := a.IPs().Used(), a.Ports().Used()
			txn, err := a.Allocate(ctx, tc.svc, false)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.True(t, apierrors.IsInvalid(err), "%v is a 422", err)
				assert.Equal(t, tc.wantErr, err.Error())
				assert.Nil(t, txn)
				assert.Equal(t, usedIPs, a.IPs().Used(), "a failed allocation holds nothing")
				assert.Equal(t, usedPorts, a.Ports().Used())
				return
			}
			require.NoError(t, err)
			txn.Commit()
			tc.check(t, tc.svc, a)
		})
	}
}

func TestAllocateFull(t *testing.T) {
	ctx := context.Background()
	a := newAllocator(t, "10.0.0.0/30", utilnet.PortRange{Base: 30000, Size: 1}, nil)
	for _, name := range []string{"a", "b"} {
		_, err := a.Allocate(ctx, svc(name, corev1.ServiceTypeClusterIP), false)
		require.NoError(t, err)
	}
	_, err := a.Allocate(ctx, svc("c", corev1.ServiceTypeClusterIP), false)
	require.Error(t, err)
	assert.True(t, apierrors.IsInternalError(err))
	assert.Contains(t, err.Error(), "failed to allocate a serviceIP: range is full")

	b := newAllocator(t, "10.0.0.0/24", utilnet.PortRange{Base: 30000, Size: 1}, nil)
	s := svc("np", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	})
	_, err = b.Allocate(ctx, s, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed to allocate a nodePort: range is full")
	assert.Equal(t, 0, b.IPs().Used(), "the cluster IP reserved before the node ports failed is given back")
	assert.Equal(t, 0, b.Ports().Used())
}

func TestAllocateDryRun(t *testing.T) {
	ctx := context.Background()
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, nil)
	require.NoError(t, a.IPs().Allocate(mustAddr("10.96.0.10")))

	s := svc("np", corev1.ServiceTypeNodePort, func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	})
	txn, err := a.Allocate(ctx, s, true)
	require.NoError(t, err)
	assert.True(t, a.IPs().Contains(mustAddr(s.Spec.ClusterIP)), "a dry run shows a plausible cluster IP")
	assert.NotEqual(t, s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort, "a dry run picks distinct node ports")
	ips, ports := txn.Reserved()
	assert.Len(t, ips, 1)
	assert.Len(t, ports, 2)
	txn.Commit()
	assert.Equal(t, 1, a.IPs().Used(), "a dry run reserves nothing")
	assert.Equal(t, 0, a.Ports().Used())

	_, err = a.Allocate(ctx, svc("dns", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.10")), true)
	assert.ErrorContains(t, err, "provided IP is already allocated", "a dry run still checks requested values")
	_, err = a.Allocate(ctx, svc("out", corev1.ServiceTypeClusterIP, withClusterIP("10.0.0.1")), true)
	assert.ErrorContains(t, err, "is not in the valid range")
}

func TestTxnRevert(t *testing.T) {
	ctx := context.Background()
	a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, nil)
	s := svc("np", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.20"), withNodePorts(30020))
	txn, err := a.Allocate(ctx, s, false)
	require.NoError(t, err)
	ips, ports := txn.Reserved()
	assert.Equal(t, []netip.Addr{mustAddr("10.96.0.20")}, ips)
	assert.Equal(t, []int{30020}, ports)
	txn.Revert()
	txn.Revert() // idempotent
	txn.Commit() // after Revert: nothing
	var nilTxn *Txn
	nilTxn.Commit()
	assert.Equal(t, 0, a.IPs().Used())
	assert.Equal(t, 0, a.Ports().Used())
}

func TestReallocate(t *testing.T) {
	ctx := context.Background()
	type step struct {
		name      string
		old       *corev1.Service
		update    func(s *corev1.Service)
		wantErr   string
		committed func(t *testing.T, s *corev1.Service, a *Allocator)
		reverted  func(t *testing.T, a *Allocator)
	}
	for _, tc := range []step{
		{
			name: "ClusterIP to ExternalName releases the IP on commit",
			old:  svc("web", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.20")),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "", nil, nil, nil
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.False(t, a.IPs().Has(mustAddr("10.96.0.20")))
			},
			reverted: func(t *testing.T, a *Allocator) {
				assert.True(t, a.IPs().Has(mustAddr("10.96.0.20")), "a failed update keeps what the service holds")
			},
		},
		{
			name: "ExternalName to ClusterIP allocates",
			old:  svc("web", corev1.ServiceTypeExternalName),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeClusterIP, ""
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.True(t, a.IPs().Has(mustAddr(s.Spec.ClusterIP)))
				assert.Equal(t, v4, s.Spec.IPFamilies)
				assert.Equal(t, corev1.IPFamilyPolicySingleStack, *s.Spec.IPFamilyPolicy)
			},
			reverted: func(t *testing.T, a *Allocator) {
				assert.Equal(t, 0, a.IPs().Used())
			},
		},
		{
			name: "NodePort to ClusterIP releases the node ports",
			old:  svc("np", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.21"), withNodePorts(30021)),
			update: func(s *corev1.Service) {
				s.Spec.Type, s.Spec.Ports[0].NodePort = corev1.ServiceTypeClusterIP, 0
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.False(t, a.Ports().Has(30021))
				assert.True(t, a.IPs().Has(mustAddr("10.96.0.21")), "the cluster IP stays")
			},
			reverted: func(t *testing.T, a *Allocator) {
				assert.True(t, a.Ports().Has(30021))
			},
		},
		{
			name: "ClusterIP to NodePort allocates node ports, keeps the IP",
			old:  svc("np", corev1.ServiceTypeClusterIP, withClusterIP("10.96.0.22")),
			update: func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeNodePort
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.NotZero(t, s.Spec.Ports[0].NodePort)
				assert.Equal(t, 1, a.Ports().Used())
				assert.Equal(t, 1, a.IPs().Used())
			},
			reverted: func(t *testing.T, a *Allocator) {
				assert.Equal(t, 0, a.Ports().Used())
				assert.Equal(t, 1, a.IPs().Used())
			},
		},
		{
			name: "a changed node port: the new one is reserved, the old one released",
			old:  svc("np", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.23"), withNodePorts(30023)),
			update: func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = 30024
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, []int{30024}, a.Ports().Allocated())
			},
			reverted: func(t *testing.T, a *Allocator) {
				assert.Equal(t, []int{30023}, a.Ports().Allocated())
			},
		},
		{
			name:    "a node port taken by another service",
			old:     svc("np", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.25"), withNodePorts(30025)),
			update:  func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 },
			wantErr: `Service "np" is invalid: spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated`,
		},
		{
			name: "an unchanged service changes nothing",
			old:  svc("np", corev1.ServiceTypeNodePort, withClusterIP("10.96.0.26"), withNodePorts(30026)),
			update: func(s *corev1.Service) {
				s.Labels = map[string]string{"x": "y"}
			},
			committed: func(t *testing.T, s *corev1.Service, a *Allocator) {
				assert.Equal(t, []int{30026}, a.Ports().Allocated())
				assert.Equal(t, []netip.Addr{mustAddr("10.96.0.26")}, a.IPs().Allocated())
			},
		},
	} {
		for _, commit := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/commit", false: "/revert"}[commit]
			t.Run(name, func(t *testing.T) {
				a := newAllocator(t, "10.96.0.0/12", utilnet.PortRange{}, nil)
				old := tc.old.DeepCopy()
				txn, err := a.Allocate(ctx, old, false)
				require.NoError(t, err)
				txn.Commit()
				require.NoError(t, a.Ports().Allocate(30001)) // another service's

				s := old.DeepCopy()
				tc.update(s)
				txn, err = a.Reallocate(ctx, s, old, false)
				if tc.wantErr != "" {
					require.EqualError(t, err, tc.wantErr)
					assert.True(t, a.Ports().Has(int(old.Spec.Ports[0].NodePort)), "a rejected update keeps what the service holds")
					return
				}
				require.NoError(t, err)
				a.Ports().Release(30001)
				if commit {
					txn.Commit()
					tc.committed(t, s, a)
				} else if tc.reverted != nil {
					txn.Revert()
					tc.reverted(t, a)
				}
			})
		}
	}
}
