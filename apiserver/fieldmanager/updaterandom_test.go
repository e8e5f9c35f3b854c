package fieldmanager

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"

	"github.com/podkit/podkit/apiserver/scheme"
)

// randomKinds are the kinds the random updates cover.
var randomKinds = []runtime.Object{
	&corev1.Pod{}, &appsv1.Deployment{}, &corev1.Node{}, &corev1.Event{}, &eventsv1.Event{},
	&coordinationv1.Lease{}, &corev1.Service{}, &corev1.ConfigMap{}, &appsv1.ReplicaSet{},
	&batchv1.Job{}, &discoveryv1.EndpointSlice{}, &corev1.Namespace{},
}

// TestUpdateFieldsRandomObjects writes random objects of every kind of
// randomKinds, each through a sequence of random updates by a few
// managers through the main resource and the status subresource: mostly
// small changes deep in the object (a field replaced, a list item or map
// entry added, dropped or duplicated), sometimes a whole new object. Whatever the
// fast path takes must come out as the library writes it.
func TestUpdateFieldsRandomObjects(t *testing.T) {
	s := scheme.New()
	f, rnd := newFiller(t)
	managers := []string{"creator", "kubelet", "kube-controller-manager", "kubectl-edit"}
	covered, tracked, total := 0, 0, 0
	for _, kind := range randomKinds {
		gvks, _, err := s.ObjectKinds(kind)
		require.NoError(t, err)
		p := newPair(t, gvks[0])
		for range 12 {
			obj := kind.DeepCopyObject()
			f.Fill(obj)
			a, err := meta.Accessor(obj)
			require.NoError(t, err)
			a.SetManagedFields(nil)
			a.SetResourceVersion("")
			live := p.create(t, obj, "creator")
			for range 4 {
				next := randomUpdate(rnd, f, live)
				opts := UpdateOptions{FieldManager: managers[rnd.Intn(len(managers))]}
				if rnd.Intn(3) == 0 {
					opts.Subresource = "status"
				}
				if len(managedFieldsOf(live)) > 0 {
					tracked++
				}
				var ok bool
				live, ok = p.update(t, live, next, opts)
				total++
				if ok {
					covered++
				}
			}
		}
	}
	t.Logf("fast path took %d of %d random updates (%d of live objects with managedFields)", covered, total, tracked)
}

// randomUpdate returns a request for live: its copy mixed with a random
// object of the kind, keeping live's identity and (mostly) managedFields.
func randomUpdate(rnd *rand.Rand, f *randfill.Filler, live runtime.Object) runtime.Object {
	next := live.DeepCopyObject()
	other := live.DeepCopyObject()
	f.Fill(other)
	nv, ov := reflect.ValueOf(next).Elem(), reflect.ValueOf(other).Elem()
	whole := rnd.Intn(8) == 0
	for i := range nv.NumField() {
		name := nv.Type().Field(i).Name
		switch {
		case name == "TypeMeta":
		case name == "ObjectMeta":
			om, oo := nv.Field(i), ov.Field(i)
			for _, field := range []string{"Labels", "Annotations", "Finalizers", "OwnerReferences", "DeletionGracePeriodSeconds"} {
				if whole || rnd.Intn(4) == 0 {
					mix(rnd, om.FieldByName(field), oo.FieldByName(field), whole)
				}
			}
		default:
			mix(rnd, nv.Field(i), ov.Field(i), whole)
		}
	}
	if rnd.Intn(4) == 0 {
		a, _ := meta.Accessor(next)
		a.SetManagedFields(nil)
	}
	return next
}

// mix changes dst toward src: the whole value, or (mostly) a few parts of
// it deep down: struct fields, list items, map entries.
func mix(rnd *rand.Rand, dst, src reflect.Value, whole bool) {
	if whole || rnd.Intn(5) == 0 {
		dst.Set(src)
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if !dst.IsNil() && !src.IsNil() {
			mix(rnd, dst.Elem(), src.Elem(), false)
		}
	case reflect.Struct:
		for i := range dst.NumField() {
			if dst.Type().Field(i).IsExported() && rnd.Intn(3) == 0 {
				mix(rnd, dst.Field(i), src.Field(i), false)
			}
		}
	case reflect.Slice:
		switch n := dst.Len(); {
		case n > 0 && rnd.Intn(3) == 0: // drop an item
			i := rnd.Intn(n)
			dst.Set(reflect.AppendSlice(dst.Slice(0, i), dst.Slice(i+1, n)))
		case n > 0 && rnd.Intn(4) == 0: // duplicate one
			dst.Set(reflect.Append(dst, dst.Index(rnd.Intn(n))))
		case src.Len() > 0 && rnd.Intn(2) == 0: // add one
			dst.Set(reflect.Append(dst, src.Index(rnd.Intn(src.Len()))))
		case n > 0 && src.Len() > 0: // change one
			mix(rnd, dst.Index(rnd.Intn(n)), src.Index(rnd.Intn(src.Len())), false)
		}
	case reflect.Map:
		if dst.IsNil() {
			return
		}
		if keys := dst.MapKeys(); len(keys) > 0 && rnd.Intn(2) == 0 {
			dst.SetMapIndex(keys[rnd.Intn(len(keys))], reflect.Value{})
		}
		for it := src.MapRange(); it.Next(); {
			if rnd.Intn(2) == 0 {
				dst.SetMapIndex(it.Key(), it.Value())
			}
		}
	}
}
