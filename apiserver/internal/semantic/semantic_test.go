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
	"k8s.io/apimachinery/pkg/util/intstr"
)

// workloadPod is a pod as a Deployment's ReplicaSet creates it and the API
// server stores it: two containers with resources, ports, environment and
// a probe, owner reference, managedFields, defaulted status.
func workloadPod() *corev1.Pod {
	res := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	grace := int64(30)
	ctr := func(name, image string, port int32) corev1.Container {
		return corev1.Container{
			Name: name, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env:       []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"}},
			Resources: res("250m", "256Mi"),
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctrl := true
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-7d4b9c8f6d-x2x9k", GenerateName: "web-7d4b9c8f6d-",
			UID: "0b7c6f0e-1d2a-4c53-9a52-6f1d5b1c1e01", ResourceVersion: "41", CreationTimestamp: created,
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6d"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d", UID: "5c1e6c1a-3f0e-4e0b-9b59-0f5d2c3a4b5c", Controller: &ctrl, BlockOwnerDeletion: &ctrl}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"5c1e6c1a-3f0e-4e0b-9b59-0f5d2c3a4b5c\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}`)}}},
		},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{ctr("web", "registry.example/web:1.2.3", 8080), ctr("sidecar", "registry.example/proxy:0.9", 9090)},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "default", SchedulerName: "default-scheduler", SecurityContext: &corev1.PodSecurityContext{},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSGuaranteed},
	}
}

func TestEqualAgreesWithSemantic(t *testing.T) {
	cur := workloadPod()
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
		workloadPod(),
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
