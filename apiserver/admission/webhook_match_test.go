package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRuleMatches(t *testing.T) {
	cluster, namespaced := admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope
	rule := func(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope *admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: scope}}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	pods := &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "ns"}
	podStatus := &Attributes{Operation: Update, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Subresource: "status", Namespace: "ns"}
	nodes := &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}}
	ns := &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Namespace: "x"}
	deploy := &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "ns"}
	tests := []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		a    *Attributes
		want bool
	}{
		{"exact", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, nil), pods, true},
		{"other operation", rule(create, []string{""}, []string{"v1"}, []string{"pods"}, nil), podStatus, false},
		{"other group", rule(create, []string{"apps"}, []string{"v1"}, []string{"pods"}, nil), pods, false},
		{"star group and version", rule(create, []string{"*"}, []string{"*"}, []string{"deployments"}, nil), deploy, true},
		{"star is not subresources", rule(all, []string{""}, []string{"v1"}, []string{"*"}, nil), podStatus, false},
		{"star slash star", rule(all, []string{""}, []string{"v1"}, []string{"*/*"}, nil), podStatus, true},
		{"pods slash star covers pods", rule(all, []string{""}, []string{"v1"}, []string{"pods/*"}, nil), pods, true},
		{"star slash status", rule(all, []string{""}, []string{"v1"}, []string{"*/status"}, nil), podStatus, true},
		{"pods rule misses status", rule(all, []string{""}, []string{"v1"}, []string{"pods"}, nil), podStatus, false},
		{"cluster scope misses pods", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, &cluster), pods, false},
		{"cluster scope has nodes", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, &cluster), nodes, true},
		{"namespaces are cluster scoped", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, &cluster), ns, true},
		{"namespaced scope", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, &namespaced), pods, true},
		{"namespaced scope misses namespaces", rule(all, []string{"*"}, []string{"*"}, []string{"*"}, &namespaced), ns, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RuleMatches(tt.rule, tt.a))
		})
	}
}
