package fieldmanager

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/scheme"
)

const kubectlUA = "kubectl/v1.31.0 (linux/amd64) kubernetes/6911225"

func TestUpdateCreate(t *testing.T) {
	tests := []struct {
		name, fieldManager, userAgent, want string
	}{
		{"manager from the user agent", "", kubectlUA, "kubectl"},
		{"explicit manager wins", "kubectl-create", kubectlUA, "kubectl-create"},
		{"client-go program", "", "controller/v0.0.0 (linux/amd64) kubernetes/$Format", "controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newManager(t)
			out, err := m.Update(context.Background(), nil, newDeployment(t), deployGVK,
				UpdateOptions{FieldManager: tt.fieldManager, UserAgent: tt.userAgent})
			require.NoError(t, err)
			require.Len(t, managedFieldsOf(out), 1)
			e := entry(t, out, tt.want, metav1.ManagedFieldsOperationUpdate, "")
			assert.Equal(t, "apps/v1", e.APIVersion)
			assert.Equal(t, "FieldsV1", e.FieldsType)
			assert.Equal(t, t0, e.Time.Time)
			assert.True(t, owns(t, e, "spec", "replicas"))
			assert.True(t, owns(t, e, "metadata", "labels", "tier"))
			assert.True(t, owns(t, e, "spec", "template", "spec", "containers", keyName("nginx"), "image"))
			assert.True(t, owns(t, e, "spec", "progressDeadlineSeconds"), "defaulted fields belong to the creator, as in Kubernetes")
			assert.False(t, owns(t, e, "metadata", "name"), "identity fields are never owned")
		})
	}
}

func TestUpdateSequences(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		opts   UpdateOptions
		check  func(t *testing.T, live, out *appsv1.Deployment)
	}{{
		name:   "a changed field moves to the writer",
		mutate: func(d *appsv1.Deployment) { n := int32(7); d.Spec.Replicas = &n },
		opts:   UpdateOptions{FieldManager: "kube-controller-manager"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			e := entry(t, out, "kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "")
			assert.True(t, owns(t, e, "spec", "replicas"))
			assert.False(t, owns(t, e, "spec", "selector"))
			assert.Equal(t, t0.Add(time.Second), e.Time.Time)
			creator := entry(t, out, "kubectl-create", metav1.ManagedFieldsOperationUpdate, "")
			assert.False(t, owns(t, creator, "spec", "replicas"))
			assert.Equal(t, t0, creator.Time.Time, "untouched entries keep their time")
		},
	}, {
		name:   "the same manager's entries merge",
		mutate: func(d *appsv1.Deployment) { d.Labels["extra"] = "1" },
		opts:   UpdateOptions{UserAgent: "kubectl-create/v1.31.0"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			require.Len(t, out.ManagedFields, 1)
			e := entry(t, out, "kubectl-create", metav1.ManagedFieldsOperationUpdate, "")
			assert.True(t, owns(t, e, "metadata", "labels", "extra"))
			assert.True(t, owns(t, e, "spec", "replicas"))
			assert.Equal(t, t0.Add(time.Second), e.Time.Time)
		},
	}, {
		name:   "a no-op write changes nothing",
		mutate: func(d *appsv1.Deployment) {},
		opts:   UpdateOptions{FieldManager: "someone"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			assert.Equal(t, live.ManagedFields, out.ManagedFields)
		},
	}, {
		name:   "managedFields copied from a GET are taken as they are",
		mutate: func(d *appsv1.Deployment) { d.Labels["x"] = "y" },
		opts:   UpdateOptions{FieldManager: "kubectl-edit"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			assert.ElementsMatch(t, []string{"kubectl-create/Update", "kubectl-edit/Update"}, managers(out))
		},
	}, {
		name: "an empty managedFields list resets tracking",
		mutate: func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{}
			d.Labels["x"] = "y"
		},
		opts: UpdateOptions{FieldManager: "janitor"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			assert.Empty(t, out.ManagedFields)
		},
	}, {
		name: "managedFields sent to the status subresource are ignored",
		mutate: func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{}
			d.Status.ReadyReplicas = 2
		},
		opts: UpdateOptions{FieldManager: "kube-controller-manager", Subresource: "status"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			e := entry(t, out, "kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status")
			assert.True(t, owns(t, e, "status", "readyReplicas"))
			entry(t, out, "kubectl-create", metav1.ManagedFieldsOperationUpdate, "")
		},
	}, {
		name: "status written through the main resource is not owned",
		mutate: func(d *appsv1.Deployment) {
			d.Status.ReadyReplicas = 2
			d.Labels["x"] = "y"
		},
		opts: UpdateOptions{FieldManager: "kubectl-replace"},
		check: func(t *testing.T, live, out *appsv1.Deployment) {
			e := entry(t, out, "kubectl-replace", metav1.ManagedFieldsOperationUpdate, "")
			assert.True(t, owns(t, e, "metadata", "labels", "x"))
			assert.False(t, owns(t, e, "status", "readyReplicas"))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, clk := newManager(t)
			ctx := context.Background()
			created, err := m.Update(ctx, nil, newDeployment(t), deployGVK, UpdateOptions{FieldManager: "kubectl-create"})
			require.NoError(t, err)
			live := persisted(t, created, "1").(*appsv1.Deployment)
			clk.advance(time.Second)
			obj := live.DeepCopy()
			tt.mutate(obj)
			out, err := m.Update(ctx, live, obj, deployGVK, tt.opts)
			require.NoError(t, err)
			assert.Same(t, obj, out, "updated in place")
			tt.check(t, live, out.(*appsv1.Deployment))
		})
	}
}

func TestUpdateKeepsLiveManagedFieldsOnFailure(t *testing.T) {
	var logs bytes.Buffer
	m, err := New(scheme.New(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	ctx := context.Background()
	live, err := m.Update(ctx, nil, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "b"}}},
		podGVK, UpdateOptions{FieldManager: "creator"})
	require.NoError(t, err)
	live = persisted(t, live, "1")
	obj := live.DeepCopyObject().(*corev1.Pod)
	obj.ManagedFields = nil
	obj.Labels["c"] = "d"
	// A Pod tracked as a Deployment cannot be converted: the write goes on
	// with the stored managedFields.
	out, err := m.Update(ctx, live, obj, deployGVK, UpdateOptions{FieldManager: "x"})
	require.NoError(t, err)
	assert.Equal(t, managedFieldsOf(live), managedFieldsOf(out))
	assert.Contains(t, logs.String(), "managedFields not updated")
}

func TestUpdateUnknownKind(t *testing.T) {
	m, _ := newManager(t)
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	out, err := m.Update(context.Background(), nil, obj, gvk, UpdateOptions{FieldManager: "x"})
	assert.ErrorIs(t, err, ErrUnknownKind)
	assert.Same(t, obj, out)
	assert.Empty(t, obj.ManagedFields)
}

func TestIgnoreTimestampOnlyChanges(t *testing.T) {
	at := func(sec int) *metav1.Time { return &metav1.Time{Time: t0.Add(time.Duration(sec) * time.Second)} }
	base := func(sec int, label string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"l": label},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "v1", FieldsType: "FieldsV1", Time: at(sec), FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}}}
	}
	tests := []struct {
		name     string
		newObj   *corev1.ConfigMap
		want     bool
		wantTime *metav1.Time
	}{
		{"only the time changed", base(9, "a"), true, at(0)},
		{"the object changed too", base(9, "b"), false, at(9)},
		{"nothing changed", base(0, "a"), false, at(0)},
		{"entries differ", func() *corev1.ConfigMap {
			c := base(9, "a")
			c.ManagedFields[0].Manager = "other"
			return c
		}(), false, at(9)},
		{"no managedFields", func() *corev1.ConfigMap {
			c := base(9, "a")
			c.ManagedFields = nil
			return c
		}(), false, nil},
	}
	m, _ := newManager(t)
	impls := map[string]func(newObj, oldObj runtime.Object) bool{
		"func":    IgnoreTimestampOnlyChanges,
		"Manager": m.IgnoreTimestampOnlyChanges,
	}
	for impl, ignore := range impls {
		for _, tt := range tests {
			t.Run(impl+"/"+tt.name, func(t *testing.T) {
				old := base(0, "a")
				newObj := tt.newObj.DeepCopy()
				assert.Equal(t, tt.want, ignore(newObj, old))
				if tt.wantTime != nil {
					assert.True(t, tt.wantTime.Equal(newObj.ManagedFields[0].Time))
				}
				assert.Equal(t, base(0, "a"), old, "old untouched")
			})
		}
	}
}

func TestCheckAfterAdmission(t *testing.T) {
	good := []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}
	tests := []struct {
		name  string
		after []metav1.ManagedFieldsEntry
		warn  bool
	}{
		{"valid", good, false},
		{"invalid fields type", []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV9"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ManagedFields: tt.after}}
			w := CheckAfterAdmission(obj, good)
			if !tt.warn {
				assert.Empty(t, w)
				assert.Equal(t, tt.after, obj.ManagedFields)
				return
			}
			assert.Contains(t, w, ".metadata.managedFields was in an invalid state after admission")
			assert.Equal(t, good, obj.ManagedFields)
		})
	}
}

func TestFastPathFailureLeavesTheWriteToTheLibrary(t *testing.T) {
	var logs bytes.Buffer
	m, err := New(scheme.New(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	ok := m.fastPath(context.Background(), podGVK, func() bool { panic("unforeseen") })
	assert.False(t, ok)
	assert.Contains(t, logs.String(), "fast path failed")
	assert.Contains(t, logs.String(), "unforeseen")
	assert.True(t, m.fastPath(context.Background(), podGVK, func() bool { return true }))
}
