package admission

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNamespaceLifecycle(t *testing.T) {
	store := newFakeStore()
	deleting := namespace("leaving", corev1.NamespaceActive)
	deleting.DeletionTimestamp = &metav1.Time{}
	store.put(t, namespacesGR,
		namespace("team", corev1.NamespaceActive),
		namespace("default", corev1.NamespaceActive),
		namespace("gone", corev1.NamespaceTerminating),
		deleting)
	plugin, err := NewNamespaceLifecycle(NamespaceLifecycleConfig{Namespaces: store})
	require.NoError(t, err)

	cm := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}}
	}
	tests := []struct {
		name    string
		req     *Attributes
		code    int32
		message string
	}{
		{name: "create in active namespace", req: attrs(Create, "configmaps", "team", "cfg", cm("team"), nil)},
		{name: "update in active namespace", req: attrs(Update, "configmaps", "team", "cfg", cm("team"), cm("team"))},
		{
			name: "create in missing namespace", req: attrs(Create, "configmaps", "nope", "cfg", cm("nope"), nil),
			code: http.StatusNotFound, message: `namespaces "nope" not found`,
		},
		{
			name: "update in missing namespace", req: attrs(Update, "configmaps", "nope", "cfg", cm("nope"), cm("nope")),
			code: http.StatusNotFound, message: `namespaces "nope" not found`,
		},
		{name: "delete in missing namespace", req: attrs(Delete, "configmaps", "nope", "cfg", nil, cm("nope"))},
		{
			name: "create in terminating namespace", req: attrs(Create, "configmaps", "gone", "cfg", cm("gone"), nil),
			code:    http.StatusForbidden,
			message: `configmaps "cfg" is forbidden: unable to create new content in namespace gone because it is being terminated`,
		},
		{
			name: "create in namespace with deletion timestamp", req: attrs(Create, "configmaps", "leaving", "cfg", cm("leaving"), nil),
			code:    http.StatusForbidden,
			message: `configmaps "cfg" is forbidden: unable to create new content in namespace leaving because it is being terminated`,
		},
		{
			name: "events are not exempt", req: attrs(Create, "events", "gone", "e1", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1"}}, nil),
			code:    http.StatusForbidden,
			message: `events "e1" is forbidden: unable to create new content in namespace gone because it is being terminated`,
		},
		{name: "update in terminating namespace", req: attrs(Update, "configmaps", "gone", "cfg", cm("gone"), cm("gone"))},
		{name: "delete in terminating namespace", req: attrs(Delete, "configmaps", "gone", "cfg", nil, cm("gone"))},
		{name: "create a namespace", req: attrs(Create, "namespaces", "", "new", namespace("new", ""), nil)},
		{name: "delete an ordinary namespace", req: attrs(Delete, "namespaces", "", "team", nil, nil)},
		{
			name: "delete default", req: attrs(Delete, "namespaces", "", "default", nil, nil),
			code: http.StatusForbidden, message: `namespaces "default" is forbidden: this namespace may not be deleted`,
		},
		{
			name: "delete kube-system", req: attrs(Delete, "namespaces", "", "kube-system", nil, nil),
			code: http.StatusForbidden, message: `namespaces "kube-system" is forbidden: this namespace may not be deleted`,
		},
		{
			name: "delete kube-public", req: attrs(Delete, "namespaces", "", "kube-public", nil, nil),
			code: http.StatusForbidden, message: `namespaces "kube-public" is forbidden: this namespace may not be deleted`,
		},
		{name: "cluster-scoped object", req: &Attributes{
			Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Name: "n1", Object: &corev1.Node{},
		}},
		{name: "local access review in missing namespace", req: &Attributes{
			Operation: Create, Namespace: "nope",
			Resource: schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "localsubjectaccessreviews"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plugin.Admit(context.Background(), tt.req)
			if tt.code == 0 {
				assert.NoError(t, err)
				return
			}
			requireStatus(t, err, tt.code, tt.message)
		})
	}
}

func TestNamespaceLifecycleTerminatingCause(t *testing.T) {
	store := newFakeStore()
	store.put(t, namespacesGR, namespace("gone", corev1.NamespaceTerminating))
	plugin, err := NewNamespaceLifecycle(NamespaceLifecycleConfig{Namespaces: store})
	require.NoError(t, err)
	err = plugin.Admit(context.Background(), createPod("gone", newPod("p")))
	var se *apierrors.StatusError
	require.ErrorAs(t, err, &se)
	require.NotNil(t, se.ErrStatus.Details)
	assert.Equal(t, []metav1.StatusCause{{
		Type: corev1.NamespaceTerminatingCause, Message: "namespace gone is being terminated", Field: "metadata.namespace",
	}}, se.ErrStatus.Details.Causes)
}

func TestNamespaceLifecycleOptionsAndErrors(t *testing.T) {
	_, err := NewNamespaceLifecycle(NamespaceLifecycleConfig{})
	assert.Error(t, err)

	store := newFakeStore()
	plugin, err := NewNamespaceLifecycle(NamespaceLifecycleConfig{Namespaces: store, ImmortalNamespaces: []string{"prod"}})
	require.NoError(t, err)
	assert.NoError(t, plugin.Admit(context.Background(), attrs(Delete, "namespaces", "", "default", nil, nil)))
	assert.True(t, apierrors.IsForbidden(plugin.Admit(context.Background(), attrs(Delete, "namespaces", "", "prod", nil, nil))))

	store.failGet = errors.New("disk on fire")
	err = plugin.Admit(context.Background(), createPod("team", newPod("p")))
	assert.True(t, apierrors.IsInternalError(err), "got %v", err)
	assert.Contains(t, err.Error(), "disk on fire")
	assert.True(t, plugin.Handles(Delete))
	assert.False(t, plugin.Handles(Connect))
}
