package volume

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "bee", "EMPTY": ""}
	lookup := func(n string) string {
		if v, ok := vars[n]; ok {
			return v
		}
		return "$(" + n + ")"
	}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(B)z", "xaybeez"},
		{"$(EMPTY)", ""},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"$(A$(B)", "$(A$(B)"}, // the name is "A$(B", unknown, kept
		{"$()", "$()"},
		{"ünï$(A)cödé", "ünïacödé"},
	} {
		assert.Equal(t, tc.want, expand(tc.in, lookup), "expand(%q)", tc.in)
	}
}

func TestContainerEnv(t *testing.T) {
	env := newTestManager(t)
	pod := testPod()
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}})
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{
		{Name: "LATER", Value: "$(FIRST)"}, // defined after: stays literal
		{Name: "FIRST", Value: "1"},
		{Name: "NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "SIDE_CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "side", Resource: "limits.cpu"}}},
		{Name: "BAD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}},
		{Name: "CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}},
		{Name: "FIRST", Value: "$(FIRST)+1"},
	}
	assert.Equal(t, map[string]string{
		"LATER": "$(FIRST)", "FIRST": "1+1", "NS": "default", "MEM": "64", "SIDE_CPU": "2",
	}, env.m.containerEnv(pod, c))
}
