package fieldmanager

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpdateScale(t *testing.T) {
	m, clk := newManager(t)
	ctx := context.Background()
	live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.NoError(t, err)
	live = persisted(t, live, "1")
	clk.advance(time.Second)

	obj := live.DeepCopyObject().(*appsv1.Deployment)
	n := int32(5)
	obj.Spec.Replicas = &n
	out, err := m.UpdateScale(ctx, live, obj, deployGVK, UpdateOptions{UserAgent: "kubectl-scale/v1.31.0"})
	require.NoError(t, err)
	e := entry(t, out, "kubectl-scale", metav1.ManagedFieldsOperationUpdate, "scale")
	assert.Equal(t, "apps/v1", e.APIVersion)
	assert.Nil(t, e.Time, "kube-apiserver's scale handler leaves the time out, and so does podkit")
	assert.True(t, owns(t, e, "spec", "replicas"))
	kubectl := entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, "")
	assert.False(t, owns(t, kubectl, "spec", "replicas"), "the scaler took replicas")
	assert.True(t, owns(t, kubectl, "spec", "selector"))

	// The applier now conflicts with the scaler on replicas.
	_, _, err = m.Apply(ctx, persisted(t, out, "2"), deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
	require.ErrorIs(t, err, ErrConflict)
	assert.EqualError(t, err, `Apply failed with 1 conflict: conflict with "kubectl-scale" with subresource "scale" using apps/v1: .spec.replicas`)
}

func TestApplyScale(t *testing.T) {
	scalePatch := func(n string) string {
		return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":` + n + `}}`
	}
	tests := []struct {
		name    string
		patch   string
		force   bool
		wantErr string
		check   func(t *testing.T, out *appsv1.Deployment)
	}{{
		name:    "conflicts with the applier of the workload",
		patch:   scalePatch("5"),
		wantErr: `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`,
	}, {
		name:  "force takes the replicas",
		patch: scalePatch("5"),
		force: true,
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, int32(5), *out.Spec.Replicas)
			e := entry(t, out, "hpa", metav1.ManagedFieldsOperationApply, "scale")
			assert.Equal(t, "apps/v1", e.APIVersion)
			assert.True(t, owns(t, e, "spec", "replicas"))
			assert.False(t, owns(t, entry(t, out, "kubectl", metav1.ManagedFieldsOperationApply, ""), "spec", "replicas"))
		},
	}, {
		name:  "the same value is shared",
		patch: scalePatch("3"),
		check: func(t *testing.T, out *appsv1.Deployment) {
			assert.Equal(t, int32(3), *out.Spec.Replicas)
			assert.True(t, owns(t, entry(t, out, "hpa", metav1.ManagedFieldsOperationApply, "scale"), "spec", "replicas"))
		},
	}, {
		name:    "the patch must be a Scale",
		patch:   `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":5}}`,
		wantErr: "invalid object type: apps/v1, Kind=Deployment",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newManager(t)
			ctx := context.Background()
			live, _, err := m.Apply(ctx, nil, deployGVK, []byte(deployYAML), ApplyOptions{FieldManager: "kubectl"})
			require.NoError(t, err)
			live = persisted(t, live, "1")
			snapshot := live.DeepCopyObject()
			out, _, err := m.ApplyScale(ctx, live, deployGVK, []byte(tt.patch), ApplyOptions{FieldManager: "hpa", Force: tt.force})
			assert.Equal(t, snapshot, live, "live untouched")
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, out.(*appsv1.Deployment))
		})
	}
}

func TestScaleOfUnscalableKind(t *testing.T) {
	m, _ := newManager(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	_, err := m.UpdateScale(context.Background(), cm, cm.DeepCopy(), cmGVK, UpdateOptions{FieldManager: "x"})
	assert.ErrorContains(t, err, "has no scale")
	_, _, err = m.ApplyScale(context.Background(), cm, cmGVK, []byte(`{}`), ApplyOptions{FieldManager: "x"})
	assert.ErrorContains(t, err, "has no scale")
}
