package printers

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func podList() *corev1.PodList {
	return &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: ptr(int64(7))},
		Items: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "uid-a", ResourceVersion: "40", Labels: map[string]string{"app": "a"}, CreationTimestamp: ago(time.Minute)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "kube-system", UID: "uid-b", ResourceVersion: "41", CreationTimestamp: ago(time.Hour)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		},
	}
}

func TestConvertList(t *testing.T) {
	p := newTestPrinter(t)
	table, err := p.ConvertToTable(context.Background(), podList(), &metav1.TableOptions{})
	require.NoError(t, err)

	assert.Equal(t, "42", table.ResourceVersion)
	assert.Equal(t, "token", table.Continue)
	assert.Equal(t, ptr(int64(7)), table.RemainingItemCount)
	assert.Equal(t, p.ColumnDefinitions(&corev1.Pod{}), table.ColumnDefinitions)
	require.Len(t, table.Rows, 2)
	assert.Equal(t, []any{"a", "0/1", "Pending", "0", "60s"}, table.Rows[0].Cells[:5])
	assert.Equal(t, []any{"b", "0/1", "Running", "0", "60m"}, table.Rows[1].Cells[:5])
	assert.True(t, table.GetObjectKind().GroupVersionKind().Empty(), "the encoder sets the Table's kind")
}

func TestConvertEmptyListKeepsColumns(t *testing.T) {
	p := newTestPrinter(t)
	table, err := p.ConvertToTable(context.Background(), &appsv1.DeploymentList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "9", table.ResourceVersion)
	assert.NotNil(t, table.Rows, "rows encode as [] rather than null")
	assert.Empty(t, table.Rows)
	assert.Equal(t, []string{"Name", "Ready", "Up-to-date", "Available", "Age", "+Containers", "+Images", "+Selector"}, columnNames(table.ColumnDefinitions))
}

func TestConvertSingleObject(t *testing.T) {
	p := newTestPrinter(t)
	pod := &podList().Items[0]
	table, err := p.ConvertToTable(context.Background(), pod, nil)
	require.NoError(t, err)
	assert.Equal(t, "40", table.ResourceVersion, "a single object's resourceVersion")
	assert.Empty(t, table.Continue)
	require.Len(t, table.Rows, 1)
}

func TestNoHeaders(t *testing.T) {
	p := newTestPrinter(t)
	for _, obj := range []runtime.Object{podList(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}}} {
		table, err := p.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: true})
		require.NoError(t, err)
		assert.Nil(t, table.ColumnDefinitions)
		assert.NotEmpty(t, table.Rows[0].Cells, "cells stay")
	}
}

func TestIncludeObject(t *testing.T) {
	p := newTestPrinter(t)
	list := podList()
	tests := []struct {
		policy metav1.IncludeObjectPolicy
		check  func(t *testing.T, obj runtime.Object)
	}{
		{metav1.IncludeNone, func(t *testing.T, obj runtime.Object) { assert.Nil(t, obj) }},
		{"", func(t *testing.T, obj runtime.Object) { assertPartial(t, obj, &list.Items[0]) }},
		{metav1.IncludeMetadata, func(t *testing.T, obj runtime.Object) { assertPartial(t, obj, &list.Items[0]) }},
		{metav1.IncludeObject, func(t *testing.T, obj runtime.Object) {
			pod, ok := obj.(*corev1.Pod)
			require.True(t, ok, "got %T", obj)
			assert.Equal(t, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, pod.GroupVersionKind())
			assert.Equal(t, list.Items[0].Spec, pod.Spec)
			assert.NotSame(t, &list.Items[0], pod, "a copy, not the caller's object")
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			table, err := p.ConvertToTable(context.Background(), list, &metav1.TableOptions{IncludeObject: tt.policy})
			require.NoError(t, err)
			assert.Nil(t, table.Rows[0].Object.Raw)
			tt.check(t, table.Rows[0].Object.Object)
		})
	}
	assert.True(t, list.Items[0].GroupVersionKind().Empty(), "the caller's objects keep their TypeMeta")

	_, err := p.ConvertToTable(context.Background(), list, &metav1.TableOptions{IncludeObject: "Everything"})
	require.ErrorIs(t, err, ErrUnrecognizedIncludeObject)
	assert.EqualError(t, err, `unrecognized includeObject value: "Everything"`)
}

func assertPartial(t *testing.T, obj runtime.Object, from *corev1.Pod) {
	t.Helper()
	partial, ok := obj.(*metav1.PartialObjectMetadata)
	require.True(t, ok, "got %T", obj)
	assert.Equal(t, "meta.k8s.io/v1", partial.APIVersion)
	assert.Equal(t, "PartialObjectMetadata", partial.Kind)
	assert.Equal(t, from.ObjectMeta, partial.ObjectMeta)
}

func TestIncludeObjectKeepsOwnKindAndUsesTyper(t *testing.T) {
	typer := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "example.com", Version: "v2"}
	typer.AddKnownTypes(gv, &corev1.ConfigMap{})
	p, err := New(WithClock(func() time.Time { return testNow }), WithTyper(typer))
	require.NoError(t, err)

	table, err := p.ConvertToTable(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, &metav1.TableOptions{IncludeObject: metav1.IncludeObject})
	require.NoError(t, err)
	assert.Equal(t, gv.WithKind("ConfigMap"), table.Rows[0].Object.Object.GetObjectKind().GroupVersionKind())

	own := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
	table, err = p.ConvertToTable(context.Background(), own, &metav1.TableOptions{IncludeObject: metav1.IncludeObject})
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, table.Rows[0].Object.Object.GetObjectKind().GroupVersionKind())

	_, err = p.ConvertToTable(context.Background(), &corev1.Secret{}, &metav1.TableOptions{IncludeObject: metav1.IncludeObject})
	assert.True(t, runtime.IsNotRegisteredError(errors.Unwrap(err)), "unknown kinds fail: %v", err)
}

func TestDefaultTable(t *testing.T) {
	p := newTestPrinter(t)
	created := metav1.NewTime(time.Date(2026, 4, 30, 8, 30, 0, 0, time.FixedZone("CEST", 2*3600)))
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "default", CreationTimestamp: created}}
	limits := &corev1.LimitRangeList{Items: []corev1.LimitRange{{ObjectMeta: metav1.ObjectMeta{Name: "limits"}}}}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName("w1")
	u.SetCreationTimestamp(created)

	for _, tt := range []struct {
		obj  runtime.Object
		want []any
	}{
		{role, []any{"reader", "2026-04-30T06:30:00Z"}},
		{&rbacv1.ClusterRoleList{Items: []rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "view", CreationTimestamp: created}}}}, []any{"view", "2026-04-30T06:30:00Z"}},
		{limits, []any{"limits", "0001-01-01T00:00:00Z"}},
		{u, []any{"w1", "2026-04-30T06:30:00Z"}},
		{&unstructured.UnstructuredList{Items: []unstructured.Unstructured{*u}}, []any{"w1", "2026-04-30T06:30:00Z"}},
	} {
		assert.False(t, p.Handles(tt.obj))
		table, err := p.ConvertToTable(context.Background(), tt.obj, nil)
		require.NoError(t, err)
		require.Len(t, table.Rows, 1)
		assert.Equal(t, tt.want, table.Rows[0].Cells)
		require.Len(t, table.ColumnDefinitions, 2)
		assert.Equal(t, metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}, table.ColumnDefinitions[0])
		assert.Equal(t, "Created At", table.ColumnDefinitions[1].Name)
		assert.Equal(t, "date", table.ColumnDefinitions[1].Type)
	}
}

func TestNotConvertible(t *testing.T) {
	p := newTestPrinter(t)
	_, err := p.ConvertToTable(context.Background(), &metav1.Status{}, nil)
	assert.ErrorIs(t, err, ErrNotConvertible)
	_, err = p.ConvertToTable(context.Background(), nil, nil)
	assert.ErrorIs(t, err, ErrNotConvertible)

	// A list whose items are not the kind its layout expects.
	h := p.handlerFor(&corev1.Pod{})
	_, _, err = h.row(&cellContext{now: testNow}, &corev1.Node{})
	assert.ErrorIs(t, err, ErrNotConvertible)
}

func TestCancelledContext(t *testing.T) {
	p := newTestPrinter(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.ConvertToTable(ctx, podList(), nil)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestOptions(t *testing.T) {
	_, err := New(WithClock(nil))
	assert.ErrorIs(t, err, ErrInvalidOption)
	_, err = New(WithTyper(nil))
	assert.ErrorIs(t, err, ErrInvalidOption)

	p, err := New()
	require.NoError(t, err)
	table, err := p.ConvertToTable(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", CreationTimestamp: metav1.NewTime(time.Now().Add(-10*time.Minute - time.Second))}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "10m", table.Rows[0].Cells[2], "the default clock is the wall clock")
}

// Every layout yields one cell per column, for an empty object and in a
// list, and marks exactly one column as the name.
func TestEveryLayoutIsConsistent(t *testing.T) {
	p := newTestPrinter(t)
	for typ, h := range p.handlers {
		t.Run(typ.String(), func(t *testing.T) {
			obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
			cells, _, err := h.row(&cellContext{now: testNow}, obj)
			require.NoError(t, err)
			assert.Len(t, cells, len(h.columns))
			names := 0
			for i, c := range h.columns {
				assert.NotEmpty(t, c.Description, "column %s", c.Name)
				assert.Contains(t, []string{"string", "integer", "boolean", "date"}, c.Type)
				if c.Format == "name" {
					names++
				}
				switch cells[i].(type) {
				case string, int64, bool:
				default:
					t.Errorf("cell %d (%s) has type %T", i, c.Name, cells[i])
				}
			}
			assert.Equal(t, 1, names)
		})
	}
}

func TestListItemType(t *testing.T) {
	assert.Equal(t, reflect.TypeFor[*corev1.Pod](), listItemType(reflect.TypeFor[*corev1.PodList]()))
	assert.Equal(t, reflect.TypeFor[*unstructured.Unstructured](), listItemType(reflect.TypeFor[*unstructured.UnstructuredList]()))
	assert.Nil(t, listItemType(reflect.TypeFor[*corev1.Pod]()))
	assert.Nil(t, listItemType(reflect.TypeFor[*metav1.Status]()))
}
