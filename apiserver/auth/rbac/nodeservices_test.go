package rbac

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/auth"
)

// A podkit node runs its own service proxy and DNS: its identity reads
// Services and EndpointSlices everywhere and publishes kube-dns in
// kube-system, and nothing more than that.
func TestNodeServicesGrants(t *testing.T) {
	a, _ := startRBAC(t)
	node := &auth.DefaultUser{Name: "system:node:n1", Groups: []string{GroupNodes, auth.GroupAuthenticated}}
	at := func(verb, group, resource, ns, name string) auth.Attributes {
		return auth.Attributes{User: node, ResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: "v1",
			Resource: resource, Namespace: ns, Name: name}
	}
	require.Eventually(t, func() bool {
		return decide(t, a, at("list", "discovery.k8s.io", "endpointslices", "", "")) == auth.DecisionAllow
	}, 30*time.Second, 20*time.Millisecond)
	tests := []struct {
		name  string
		attrs auth.Attributes
		want  auth.Decision
	}{
		{"watch services cluster-wide", at("watch", "", "services", "", ""), auth.DecisionAllow},
		{"watch endpointslices cluster-wide", at("watch", "discovery.k8s.io", "endpointslices", "", ""), auth.DecisionAllow},
		{"create kube-dns", at("create", "", "services", "kube-system", ""), auth.DecisionAllow},
		{"update kube-dns", at("update", "", "services", "kube-system", "kube-dns"), auth.DecisionAllow},
		{"update another kube-system service", at("update", "", "services", "kube-system", "other"), auth.DecisionNoOpinion},
		{"create a service elsewhere", at("create", "", "services", "default", ""), auth.DecisionNoOpinion},
		{"publish its DNS slice", at("create", "discovery.k8s.io", "endpointslices", "kube-system", ""), auth.DecisionAllow},
		{"write slices elsewhere", at("create", "discovery.k8s.io", "endpointslices", "default", ""), auth.DecisionNoOpinion},
		{"delete services", at("delete", "", "services", "kube-system", "kube-dns"), auth.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, decide(t, a, tt.attrs))
		})
	}
}

// The grant adds no node reads: the Node authorizer alone lets a node read
// its own Node object.
func TestNodeServicesNoNodeReads(t *testing.T) {
	a, _ := startRBAC(t)
	node := &auth.DefaultUser{Name: "system:node:n1", Groups: []string{GroupNodes, auth.GroupAuthenticated}}
	require.Eventually(t, func() bool {
		return decide(t, a, auth.Attributes{User: node, ResourceRequest: true, Verb: "list", APIGroup: "discovery.k8s.io",
			APIVersion: "v1", Resource: "endpointslices"}) == auth.DecisionAllow
	}, 30*time.Second, 20*time.Millisecond)
	for _, verb := range []string{"get", "list", "watch"} {
		assert.Equal(t, auth.DecisionNoOpinion, decide(t, a, auth.Attributes{User: node, ResourceRequest: true, Verb: verb,
			APIVersion: "v1", Resource: "nodes", Name: "n2"}), verb)
	}
}
