package fieldmanager

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/podkit/podkit/apiserver/scheme"
)

func TestNewOptions(t *testing.T) {
	s := scheme.New()
	tests := []struct {
		name    string
		opts    []Option
		wantErr string
	}{
		{"defaults", nil, ""},
		{"warm kinds", []Option{WithKinds(deployGVK, podGVK, cmGVK, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}, ""},
		{"nil clock", []Option{WithClock(nil)}, "fieldmanager: nil clock"},
		{"nil logger", []Option{WithLogger(nil)}, "fieldmanager: nil logger"},
		{"nil defaulter", []Option{WithDefaulter(nil)}, "fieldmanager: nil defaulter"},
		{"nil reset fields", []Option{WithResetFields(nil)}, "fieldmanager: nil reset fields func"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(s, tt.opts...)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, m)
		})
	}
	_, err := New(nil)
	assert.Error(t, err)
}

func TestCustomDefaulterAndResetFields(t *testing.T) {
	var defaulted int
	m, err := New(scheme.New(),
		WithDefaulter(func(obj runtime.Object) { defaulted++ }),
		WithResetFields(func(schema.GroupVersionKind, string) *fieldpath.Set { return nil }))
	require.NoError(t, err)
	out, _, err := m.Apply(context.Background(), nil, deployGVK, []byte(deployYAML+"status:\n  replicas: 1\n"), ApplyOptions{FieldManager: "k"})
	require.NoError(t, err)
	assert.Equal(t, 1, defaulted)
	assert.Nil(t, out.(*appsv1.Deployment).Spec.ProgressDeadlineSeconds, "podkit's defaults replaced")
	assert.True(t, owns(t, entry(t, out, "k", metav1.ManagedFieldsOperationApply, ""), "status", "replicas"), "no reset fields: status owned")
}

// Concurrent requests share the Manager and its field managers; run with -race.
func TestConcurrentUse(t *testing.T) {
	m, err := New(scheme.New())
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("cm-%d", i)
			patch := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"k":"v"}}`, name)
			live, _, err := m.Apply(ctx, nil, cmGVK, []byte(patch), ApplyOptions{FieldManager: "a"})
			if !assert.NoError(t, err) {
				return
			}
			obj := live.DeepCopyObject().(*corev1.ConfigMap)
			obj.Data["k2"] = "v2"
			out, err := m.Update(ctx, persisted(t, live, "1"), obj, cmGVK, UpdateOptions{FieldManager: "b"})
			if assert.NoError(t, err) {
				assert.Len(t, managedFieldsOf(out), 2)
			}
			_, _, err = m.Apply(ctx, nil, podGVK, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`), ApplyOptions{FieldManager: "a"})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
}
