package semantic

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/internal/semantic/semantictest"
)

func TestEqualAgreesWithSemantic(t *testing.T) {
	cur := semantictest.WorkloadPod()
	cases := []struct {
		name string
		a, b any
		want bool
	}{
		{"same pointer", cur, cur, true},
		{"copy", cur, cur.DeepCopy(), true},
		{"nil and pod", nil, cur, false},
		{"typed nil pods", (*corev1.Pod)(nil), (*corev1.Pod)(nil), true},
		{"typed nil and pod", (*corev1.Pod)(nil), cur, false},
		{"different types", cur, &corev1.Node{}, false},
		{"values, not pointers", *cur, *cur.DeepCopy(), true},
		{"specs", &cur.Spec, &cur.DeepCopy().Spec, true},
		{"quantities", ptr(resource.MustParse("1")), ptr(resource.MustParse("1000m")), true},
		{"quantities differ", ptr(resource.MustParse("1")), ptr(resource.MustParse("2")), false},
		{"empty and nil labels", &metav1.ObjectMeta{Labels: map[string]string{}}, &metav1.ObjectMeta{}, true},
		{"times in two zones", &metav1.ObjectMeta{CreationTimestamp: cur.CreationTimestamp},
			&metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(cur.CreationTimestamp.In(time.FixedZone("X", 3600)))}, true},
		{"raw extension", &runtime.RawExtension{Raw: []byte("{}")}, &runtime.RawExtension{Raw: []byte("{}")}, true},
	}
	var c Comparer
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, apiequality.Semantic.DeepEqual(tc.a, tc.b), "reference")
			assert.Equal(t, tc.want, c.Equal(tc.a, tc.b))
			assert.Equal(t, tc.want, c.Equal(tc.b, tc.a))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestUnchangedDetectsEverySingleFieldChange changes, one at a time, every
// field reachable in an object (allocating nil pointers and growing empty
// slices on the way) and checks that the comparer never takes the change
// for a no-op.
func TestUnchangedDetectsEverySingleFieldChange(t *testing.T) {
	ctrl := true
	objects := []runtime.Object{
		semantictest.WorkloadPod(),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"a": "b"}}},
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Count: 1},
		&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", OwnerReferences: []metav1.OwnerReference{{Controller: &ctrl}}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}},
	}
	var c Comparer
	for _, obj := range objects {
		t.Run(fmt.Sprintf("%T/%s", obj, obj.(metav1.Object).GetName()), func(t *testing.T) {
			changes := 0
			for n := 0; ; n++ {
				next := obj.DeepCopyObject()
				m := &mutator{target: n}
				m.walk(reflect.ValueOf(next).Elem(), 0)
				if !m.done {
					break
				}
				changes++
				require.False(t, apiequality.Semantic.DeepEqual(obj, next), "reference at %s", m.path)
				require.False(t, c.Equal(obj, next), "change at %s taken for equal", m.path)
			}
			t.Logf("%d single-field changes detected", changes)
			require.Greater(t, changes, 20)
		})
	}
}

// mutator changes the target-th leaf of a depth-first walk over a value.
type mutator struct {
	target, seen int
	done         bool
	path         string
	trail        []string
}

const mutateDepth = 9

func (m *mutator) leaf(change func()) {
	if m.seen == m.target {
		change()
		m.done, m.path = true, strings.Join(m.trail, "")
	}
	m.seen++
}

func (m *mutator) walk(v reflect.Value, depth int) {
	if m.done || depth > mutateDepth {
		return
	}
	switch x := v.Addr().Interface().(type) {
	case *resource.Quantity:
		m.leaf(func() { x.Add(resource.MustParse("1")) })
		return
	case *metav1.Time:
		m.leaf(func() { *x = metav1.NewTime(x.Add(time.Second)) })
		return
	case *metav1.MicroTime:
		m.leaf(func() { *x = metav1.NewMicroTime(x.Add(time.Microsecond)) })
		return
	case *metav1.FieldsV1:
		m.leaf(func() { x.Raw = append(x.Raw, ' ') })
		return
	}
	switch v.Kind() {
	case reflect.String:
		m.leaf(func() { v.SetString(v.String() + "x") })
	case reflect.Bool:
		m.leaf(func() { v.SetBool(!v.Bool()) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		m.leaf(func() { v.SetInt(v.Int() + 1) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		m.leaf(func() { v.SetUint(v.Uint() + 1) })
	case reflect.Float32, reflect.Float64:
		m.leaf(func() { v.SetFloat(v.Float() + 1) })
	case reflect.Pointer:
		if v.IsNil() {
			m.leaf(func() { v.Set(reflect.New(v.Type().Elem())) })
			if m.done {
				return
			}
			v.Set(reflect.New(v.Type().Elem())) // walk into it: the allocation is part of each change below
		}
		m.walk(v.Elem(), depth+1)
	case reflect.Slice:
		m.leaf(func() { v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem()))) })
		if v.Len() > 0 {
			m.trail = append(m.trail, "[0]")
			m.walk(v.Index(0), depth+1)
			m.trail = m.trail[:len(m.trail)-1]
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m.leaf(func() {
				if v.IsNil() {
					v.Set(reflect.MakeMap(v.Type()))
				}
				v.SetMapIndex(reflect.ValueOf("zz-added").Convert(v.Type().Key()), reflect.Zero(v.Type().Elem()))
			})
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			m.trail = append(m.trail, "."+v.Type().Field(i).Name)
			m.walk(v.Field(i), depth+1)
			m.trail = m.trail[:len(m.trail)-1]
			if m.done {
				return
			}
		}
	}
}
