package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectMetaNameRules(t *testing.T) {
	svc := func(name string) runtime.Object {
		s := validService()
		s.Name = name
		return s
	}
	cases := []struct {
		name string
		obj  runtime.Object
		want []want
	}{
		{"pod subdomain ok", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a.b-c", Namespace: "ns"}, Spec: validPodSpec()}, nil},
		{"configmap subdomain ok", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a.b", Namespace: "ns"}}, nil},
		{"configmap upper case", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Config", Namespace: "ns"}}, []want{inv("metadata.name", "RFC 1123 subdomain")}},
		{"name too long", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 254), Namespace: "ns"}}, []want{inv("metadata.name", "no more than 253")}},
		{"namespace dots rejected", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}, []want{inv("metadata.name", "must not contain dots")}},
		{"namespace upper case", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "Team"}}, []want{inv("metadata.name", "RFC 1123 label")}},
		{"namespace ok", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, nil},
		{"service dots rejected", svc("web.v1"), []want{inv("metadata.name", "DNS-1035 label")}},
		{"service leading digit rejected", svc("1web"), []want{inv("metadata.name", "DNS-1035 label")}},
		{"rbac role with colon ok", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:controller:x"}}, nil},
		{"rbac role with slash", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "a/b"}}, []want{inv("metadata.name", "may not contain '/'")}},
		{"generateName valid prefix", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg-x7k2p", GenerateName: "cfg-", Namespace: "ns"}}, nil},
		{"generateName invalid", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg-x", GenerateName: "Cfg_", Namespace: "ns"}}, []want{inv("metadata.generateName", "")}},
		{"cluster-scoped with namespace", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "ns"}}, []want{forb("metadata.namespace", "not allowed on this type")}},
		{"namespace not a label", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "Bad_NS"}}, []want{inv("metadata.namespace", "")}},
		{"labels invalid", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Labels: map[string]string{"a": "b c"}}}, []want{inv("metadata.labels", "valid label")}},
		{"annotation key invalid", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: map[string]string{"a b": "x"}}}, []want{inv("metadata.annotations", "")}},
		{"annotations too large", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: map[string]string{"big": strings.Repeat("x", 256*1024)}}},
			[]want{tooLong("metadata.annotations")}},
		{"annotations just fit", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: map[string]string{"big": strings.Repeat("x", 256*1024-3)}}}, nil},
		{"unqualified finalizer", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"mine"}}},
			[]want{inv("metadata.finalizers[0]", "neither a standard finalizer name nor is it fully qualified")}},
		{"qualified and standard finalizers", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"example.com/cleanup", "foregroundDeletion"}}}, nil},
		{"negative generation", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: -1}}, []want{inv("metadata.generation", "greater than or equal to 0")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, v.ValidateCreate(tc.obj), tc.want...) })
	}
}

func TestObjectMetaUpdate(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: storedMeta(metav1.ObjectMeta{Name: "c", Namespace: "ns"})}
	cases := []struct {
		name   string
		mutate func(m *metav1.ObjectMeta)
		want   []want
	}{
		{"unchanged", func(*metav1.ObjectMeta) {}, nil},
		{"labels and annotations change", func(m *metav1.ObjectMeta) {
			m.Labels = map[string]string{"a": "b"}
			m.Annotations = map[string]string{"x": "y"}
		}, nil},
		{"name", func(m *metav1.ObjectMeta) { m.Name = "d" }, []want{inv("metadata.name", "field is immutable")}},
		{"namespace", func(m *metav1.ObjectMeta) { m.Namespace = "other" }, []want{inv("metadata.namespace", "field is immutable")}},
		{"uid", func(m *metav1.ObjectMeta) { m.UID = "x" }, []want{inv("metadata.uid", "field is immutable")}},
		{"creationTimestamp", func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.Time{} }, []want{inv("metadata.creationTimestamp", "field is immutable")}},
		{"generation decremented", func(m *metav1.ObjectMeta) { m.Generation = -1 }, []want{
			inv("metadata.generation", "greater than or equal to 0"), inv("metadata.generation", "must not be decremented")}},
		{"resourceVersion missing", func(m *metav1.ObjectMeta) { m.ResourceVersion = "" }, []want{inv("metadata.resourceVersion", "must be specified for an update")}},
		{"bad label", func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"-a": "b"} }, []want{inv("metadata.labels", "")}},
	}
	v := Default()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := old.DeepCopy()
			tc.mutate(&cm.ObjectMeta)
			expectErrors(t, v.ValidateUpdate(cm, old), tc.want...)
		})
	}
}

func TestNoNewFinalizersWhileDeleting(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: storedMeta(metav1.ObjectMeta{Name: "c", Namespace: "ns", Finalizers: []string{"example.com/a"}})}
	now := metav1.Now()
	old.DeletionTimestamp = &now
	cm := old.DeepCopy()
	cm.Finalizers = append(cm.Finalizers, "example.com/b")
	expectErrors(t, Default().ValidateUpdate(cm, old), forb("metadata.finalizers", "no new finalizers can be added"))
}
