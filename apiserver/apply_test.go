package apiserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

func deploymentApply(replicas int32) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment("ssa", "default").
		WithLabels(map[string]string{"app": "ssa"}).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "ssa"})).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(map[string]string{"app": "ssa"}).
				WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("c").WithImage("img:1")))))
}

func TestServerSideApply(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	deps := ts.client.AppsV1().Deployments("default")

	created, err := deps.Apply(ctx, deploymentApply(2), metav1.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err, "apply creates a missing object")
	assert.Equal(t, int32(2), *created.Spec.Replicas)
	require.NotEmpty(t, created.ManagedFields)
	assert.Equal(t, "alice", created.ManagedFields[0].Manager)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, created.ManagedFields[0].Operation)

	_, err = deps.Apply(ctx, deploymentApply(5), metav1.ApplyOptions{FieldManager: "bob"})
	require.True(t, apierrors.IsConflict(err), "a second manager changing an owned field conflicts: %v", err)
	assert.Contains(t, err.Error(), `conflict with "alice"`)
	assert.Contains(t, err.Error(), ".spec.replicas")

	forced, err := deps.Apply(ctx, deploymentApply(5), metav1.ApplyOptions{FieldManager: "bob", Force: true})
	require.NoError(t, err)
	assert.Equal(t, int32(5), *forced.Spec.Replicas)

	// Ordinary writes are tracked too, under the manager the client names.
	patched, err := deps.Patch(ctx, "ssa", types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"x"}}}`),
		metav1.PatchOptions{FieldManager: "carol"})
	require.NoError(t, err)
	managers := map[string]metav1.ManagedFieldsOperationType{}
	for _, e := range patched.ManagedFields {
		managers[e.Manager] = e.Operation
	}
	assert.Equal(t, metav1.ManagedFieldsOperationUpdate, managers["carol"])
	assert.Equal(t, metav1.ManagedFieldsOperationApply, managers["bob"])

	_, err = deps.Apply(ctx, deploymentApply(1), metav1.ApplyOptions{})
	require.Error(t, err, "apply needs a field manager")
}
