package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24"}}}
}

func TestNodeCreate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(n *corev1.Node)
		want   []want
	}{
		{"valid", func(*corev1.Node) {}, nil},
		{"dual stack", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00:1::/64"} }, nil},
		{"bad cidr", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/33"} }, []want{inv("spec.podCIDRs[0]", "")}},
		{"single podCIDR only", func(n *corev1.Node) { n.Spec.PodCIDRs, n.Spec.PodCIDR = nil, "nonsense" }, []want{inv("spec.podCIDR", "")}},
		{"two of one family", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "10.245.1.0/24"} },
			[]want{inv("spec.podCIDRs", "no more than one CIDR for each IP family")}},
		{"taints valid", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoExecute}}
		}, nil},
		{"taint effect required", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "gpu"}} }, []want{req("spec.taints[0].effect")}},
		{"taint effect unknown", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: "Evict"}} }, []want{notSup("spec.taints[0].effect")}},
		{"taint key invalid", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "bad key", Effect: corev1.TaintEffectNoSchedule}}
		}, []want{inv("spec.taints[0].key", "")}},
		{"duplicate taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, []want{{typ: "FieldValueDuplicate", field: "spec.taints[1]", detail: "unique by key and effect"}}},
		{"negative capacity", func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1")}
		},
			[]want{inv("status.capacity.memory", "")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := validNode()
			tc.mutate(n)
			expectErrors(t, v.ValidateCreate(n), tc.want...)
		})
	}
}

func TestNodeUpdate(t *testing.T) {
	cases := []struct {
		name   string
		old    func(n *corev1.Node)
		mutate func(n *corev1.Node)
		want   []want
	}{
		{"unschedulable toggles", nil, func(n *corev1.Node) { n.Spec.Unschedulable = true }, nil},
		{"podCIDR set from empty", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "", nil }, func(n *corev1.Node) {
			n.Spec.PodCIDRs = []string{"10.244.2.0/24"}
		}, nil},
		{"podCIDR changed", nil, func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.244.9.0/24", []string{"10.244.9.0/24"} },
			[]want{forb("spec.podCIDRs", `node updates may not change podCIDR except from "" to valid`)}},
		{"providerID set", nil, func(n *corev1.Node) { n.Spec.ProviderID = "podkit://node-1" }, nil},
		{"providerID changed", func(n *corev1.Node) { n.Spec.ProviderID = "podkit://a" }, func(n *corev1.Node) { n.Spec.ProviderID = "podkit://b" },
			[]want{forb("spec.providerID", "may not change providerID")}},
		{"duplicate address", nil, func(n *corev1.Node) {
			a := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.1.2"}
			n.Status.Addresses = []corev1.NodeAddress{a, a}
		}, []want{dup("status.addresses[1]")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validNode()
			old.ObjectMeta = storedMeta(old.ObjectMeta)
			if tc.old != nil {
				tc.old(old)
			}
			n := old.DeepCopy()
			tc.mutate(n)
			expectErrors(t, v.ValidateUpdate(n, old), tc.want...)
			expectErrors(t, v.ValidateStatusUpdate(n, old), tc.want...)
		})
	}
}

func TestNamespace(t *testing.T) {
	v := Default()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes", "example.com/x"}}}
	expectErrors(t, v.ValidateCreate(ns))
	bad := ns.DeepCopy()
	bad.Spec.Finalizers = []corev1.FinalizerName{"custom", "bad name/x"}
	expectErrors(t, v.ValidateCreate(bad),
		inv("spec.finalizers[0]", "neither a standard finalizer name"), inv("spec.finalizers[1]", ""))

	old := ns.DeepCopy()
	old.ObjectMeta = storedMeta(old.ObjectMeta)
	renamed := old.DeepCopy()
	renamed.Name = "team-b"
	expectErrors(t, v.ValidateUpdate(renamed, old), inv("metadata.name", "field is immutable"))

	st := old.DeepCopy()
	st.Status.Phase = corev1.NamespaceTerminating
	expectErrors(t, v.ValidateStatusUpdate(st, old), inv("status.Phase", "may only be 'Active'"))
	st.Status.Phase = corev1.NamespaceActive
	expectErrors(t, v.ValidateStatusUpdate(st, old))
}
