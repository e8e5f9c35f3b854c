package admission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDefaulter(t *testing.T) {
	d := NewDefaulter()
	ctx := context.Background()
	assert.True(t, d.Handles(Create))
	assert.True(t, d.Handles(Update))
	assert.False(t, d.Handles(Delete))

	p := newPod("web", corev1.Container{Name: "web", Image: "nginx"})
	require.NoError(t, d.Admit(ctx, createPod("team", p)))
	assert.Equal(t, corev1.RestartPolicyAlways, p.Spec.RestartPolicy)
	assert.Equal(t, corev1.PullAlways, p.Spec.Containers[0].ImagePullPolicy)

	ns := namespace("team", "")
	require.NoError(t, d.Admit(ctx, attrs(Create, "namespaces", "", "team", ns, nil)))
	assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, ns.Spec.Finalizers)
	assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)

	// The namespace controller removed the finalizer: an update keeps it removed.
	finalized := namespace("team", corev1.NamespaceTerminating)
	require.NoError(t, d.Admit(ctx, attrs(Update, "namespaces", "", "team", finalized, ns)))
	assert.Empty(t, finalized.Spec.Finalizers)

	require.NoError(t, d.Admit(ctx, attrs(Delete, "pods", "team", "web", nil, p)), "nil object is fine")
}

func TestDefaulterServiceUpdateKeepsFamilyPolicy(t *testing.T) {
	d := NewDefaulter()
	old := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: corev1.ServiceSpec{
		IPFamilyPolicy: ptrTo(corev1.IPFamilyPolicyPreferDualStack),
	}}
	next := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	require.NoError(t, d.Admit(context.Background(), attrs(Update, "services", "team", "db", next, old)))
	assert.Equal(t, corev1.IPFamilyPolicyPreferDualStack, *next.Spec.IPFamilyPolicy)
	assert.Equal(t, corev1.ServiceTypeClusterIP, next.Spec.Type)

	created := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"}}
	require.NoError(t, d.Admit(context.Background(), attrs(Create, "services", "team", "db", created, nil)))
	assert.Equal(t, corev1.IPFamilyPolicySingleStack, *created.Spec.IPFamilyPolicy)
}
