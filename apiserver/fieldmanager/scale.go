package fieldmanager

import (
	"context"
	"fmt"
	"reflect"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The scale subresource. kube-apiserver tracks a write of .../scale on an
// autoscaling/v1 Scale built from the workload, with the workload's entries
// translated into Scale entries (only .spec.replicas survives), and maps
// the result back: the writer owns the workload's .spec.replicas through an
// entry with subresource "scale", taken from whoever owned it. Like
// kube-apiserver's, these entries carry no time.

// scaleGVK is the kind the scale subresource serves.
var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// replicasPath is where the scalable built-in kinds (Deployment,
// ReplicaSet, StatefulSet, ReplicationController) keep their replicas.
var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// UpdateScale records a write of the scale subresource (PUT or non-apply
// PATCH of .../scale, as kubectl scale does): live and obj are the workload
// of kind gvk before and after the Scale's replicas were written into it.
// obj's managedFields are replaced and obj is returned; if tracking fails,
// obj keeps live's managedFields and the failure is logged.
func (m *Manager) UpdateScale(ctx context.Context, live, obj runtime.Object, gvk schema.GroupVersionKind, opts UpdateOptions) (runtime.Object, error) {
	if err := ctx.Err(); err != nil {
		return obj, err
	}
	fm, err := m.fieldManager(scaleGVK, "scale")
	if err != nil {
		return obj, err
	}
	h, oldScale, err := m.scaleView(live, gvk)
	if err != nil {
		return obj, err
	}
	newScale, err := scaleOf(obj)
	if err != nil {
		return obj, err
	}
	out, err := fm.Update(oldScale, newScale, ManagerName(opts.FieldManager, opts.UserAgent))
	if err == nil {
		err = setParentEntries(h, out, obj)
	}
	if err != nil {
		m.keepLive(ctx, live, obj, gvk, err)
	}
	return obj, nil
}

// ApplyScale performs a server-side apply through the scale subresource,
// as client-go's ApplyScale does: patch is an autoscaling/v1 Scale apply
// configuration and live the workload of kind gvk. It returns a copy of
// live with the applied replicas and the managedFields mapped back, plus
// warnings; errors are those of Apply. opts.Subresource is ignored.
func (m *Manager) ApplyScale(ctx context.Context, live runtime.Object, gvk schema.GroupVersionKind, patch []byte, opts ApplyOptions) (runtime.Object, []string, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	fm, err := m.fieldManager(scaleGVK, "scale")
	if err != nil {
		return nil, nil, err
	}
	h, oldScale, err := m.scaleView(live, gvk)
	if err != nil {
		return nil, nil, err
	}
	out, warnings, err := m.apply(fm, oldScale, patch, opts)
	if err != nil {
		return nil, nil, err
	}
	scale, ok := out.(*autoscalingv1.Scale)
	if !ok {
		return nil, nil, fmt.Errorf("fieldmanager: apply to scale returned %T", out)
	}
	obj := live.DeepCopyObject()
	if err := setReplicas(obj, scale.Spec.Replicas); err != nil {
		return nil, nil, err
	}
	if err := setParentEntries(h, scale, obj); err != nil {
		return nil, nil, fmt.Errorf("fieldmanager: scale entries of %v: %w", gvk, err)
	}
	return obj, warnings, nil
}

// scaleView returns the scale handler of live and live as a Scale carrying
// its scale entries.
func (m *Manager) scaleView(live runtime.Object, gvk schema.GroupVersionKind) (*managedfields.ScaleHandler, *autoscalingv1.Scale, error) {
	h := managedfields.NewScaleHandler(managedFieldsOf(live), gvk.GroupVersion(),
		managedfields.ResourcePathMappings{gvk.GroupVersion().String(): replicasPath})
	entries, err := h.ToSubresource()
	if err != nil {
		return nil, nil, fmt.Errorf("fieldmanager: scale entries of %v: %w", gvk, err)
	}
	s, err := scaleOf(live)
	if err != nil {
		return nil, nil, err
	}
	s.ManagedFields = entries
	return h, s, nil
}

// setParentEntries maps scale's entries back onto the workload obj.
func setParentEntries(h *managedfields.ScaleHandler, scale, obj runtime.Object) error {
	parent, err := h.ToParent(managedFieldsOf(scale))
	if err != nil {
		return err
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	a.SetManagedFields(parent)
	return nil
}

// replicasField returns the addressable *int32 field Spec.Replicas of obj.
func replicasField(obj runtime.Object) (reflect.Value, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("fieldmanager: %T has no scale: not a struct", obj)
	}
	spec := v.Elem().FieldByName("Spec")
	if !spec.IsValid() || spec.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("fieldmanager: %T has no scale: no spec", obj)
	}
	r := spec.FieldByName("Replicas")
	if !r.IsValid() || r.Type() != reflect.TypeOf((*int32)(nil)) {
		return reflect.Value{}, fmt.Errorf("fieldmanager: %T has no scale: no spec.replicas", obj)
	}
	return r, nil
}

// scaleOf renders a workload's identity and desired replicas as a Scale.
func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("fieldmanager: scale of %T: %w", obj, err)
	}
	r, err := replicasField(obj)
	if err != nil {
		return nil, err
	}
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{
		Name: a.GetName(), Namespace: a.GetNamespace(), UID: a.GetUID(),
		ResourceVersion: a.GetResourceVersion(), CreationTimestamp: a.GetCreationTimestamp(),
	}}
	s.Spec.Replicas = 1 // the workloads' default
	if p := r.Interface().(*int32); p != nil {
		s.Spec.Replicas = *p
	}
	return s, nil
}

// setReplicas writes n into obj's Spec.Replicas.
func setReplicas(obj runtime.Object, n int32) error {
	r, err := replicasField(obj)
	if err != nil {
		return err
	}
	r.Set(reflect.ValueOf(&n))
	return nil
}
