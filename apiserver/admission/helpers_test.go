package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// attrs describes a request on a core/v1 resource.
func attrs(op Operation, resource, ns, name string, obj, old runtime.Object) *Attributes {
	kinds := map[string]string{
		"pods": "Pod", "services": "Service", "namespaces": "Namespace", "configmaps": "ConfigMap",
		"secrets": "Secret", "resourcequotas": "ResourceQuota", "persistentvolumeclaims": "PersistentVolumeClaim",
		"events": "Event",
	}
	return &Attributes{
		Operation: op,
		Kind:      schema.GroupVersionKind{Version: "v1", Kind: kinds[resource]},
		Resource:  schema.GroupVersionResource{Version: "v1", Resource: resource},
		Namespace: ns, Name: name, Object: obj, OldObject: old,
	}
}

func createPod(ns string, p *corev1.Pod) *Attributes {
	p.Namespace = ns
	return attrs(Create, "pods", ns, p.Name, p, nil)
}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: containers}}
}

func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.36", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

// requireStatus asserts err is an API error with the code and message.
func requireStatus(t *testing.T, err error, code int32, message string) {
	t.Helper()
	require.Error(t, err)
	var st apierrors.APIStatus
	require.ErrorAs(t, err, &st, "not an API status error: %v", err)
	assert.Equal(t, code, st.Status().Code, "status: %+v", st.Status())
	assert.Equal(t, message, st.Status().Message)
	assert.Equal(t, message, err.Error())
}

func assertQuantities(t *testing.T, want, got corev1.ResourceList) {
	t.Helper()
	require.Len(t, got, len(want), "got %v", got)
	for name, q := range want {
		g, ok := got[name]
		if assert.True(t, ok, "missing %s in %v", name, got) {
			assert.Zero(t, q.Cmp(g), "%s: want %s, got %s", name, q.String(), g.String())
		}
	}
}
