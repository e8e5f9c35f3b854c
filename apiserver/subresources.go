package apiserver

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/fieldmanager"
)

// serveStatus serves the status (and namespace finalize) subresources:
// GET returns the object, PUT and PATCH change only its status (or a
// namespace's spec.finalizers).
func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	switch info.Verb {
	case "get":
		if info.Subresource == "finalize" {
			break
		}
		return s.get(w, r, res, info)
	case "update":
		return s.update(w, r, res, info)
	case "patch":
		if info.Subresource == "finalize" {
			break
		}
		return s.patch(w, r, res, info)
	}
	return errMethodNotAllowed
}

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// toScale renders a workload's replicas as autoscaling/v1 Scale.
func toScale(obj runtime.Object) (*autoscalingv1.Scale, error) {
	var replicas, current int32
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		replicas, current, sel = deref(o.Spec.Replicas, 1), o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		replicas, current, sel = deref(o.Spec.Replicas, 1), o.Status.Replicas, o.Spec.Selector
	default:
		return nil, fmt.Errorf("%T has no scale subresource", obj)
	}
	m, _ := meta.Accessor(obj)
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: current},
	}
	if sel != nil {
		if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
			scale.Status.Selector = s.String()
		}
	}
	return scale, nil
}

// setReplicas writes a Scale's replicas into a workload.
func setReplicas(obj runtime.Object, replicas int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &replicas
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &replicas
	}
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// serveScale serves GET, PUT and PATCH of the scale subresource.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	t, err := s.negotiate(r)
	if err != nil {
		return err
	}
	scaleRes := &Resource{GroupVersion: autoscalingv1.SchemeGroupVersion, Resource: res.Resource, Kind: "Scale"}
	switch info.Verb {
	case "get":
		obj, err := s.store.Get(r.Context(), key(res, info.Namespace, info.Name))
		if err != nil {
			return storageError(err, res.GroupResource(), info.Name)
		}
		scale, err := toScale(obj)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		return s.respond(w, r, http.StatusOK, t, scaleRes, scale)
	case "update", "patch":
	default:
		return errMethodNotAllowed
	}
	dry, err := isDryRun(r)
	if err != nil {
		return err
	}
	var pt types.PatchType
	if info.Verb == "patch" {
		if pt, err = s.patchType(r); err != nil {
			return err
		}
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var want *autoscalingv1.Scale
	if info.Verb == "update" {
		obj, err := s.decodeBody(w, r, body, scaleGVK, &autoscalingv1.Scale{})
		if err != nil {
			return err
		}
		want = obj.(*autoscalingv1.Scale)
	}
	main := info
	main.Subresource = ""
	who := writer(r, "scale")
	// cur may be the store's own object: it is only read (toScale, the
	// field manager), and the workload written is a copy.
	out, _, err := s.updateShared(r.Context(), res, main, dry, func(cur runtime.Object) (runtime.Object, error) {
		if pt == types.ApplyYAMLPatchType {
			directive, err := fieldValidation(r)
			if err != nil {
				return nil, err
			}
			q := r.URL.Query()
			obj, warnings, err := s.fields.ApplyScale(r.Context(), cur, res.GroupVersionKind(), body, fieldmanager.ApplyOptions{
				FieldManager: q.Get("fieldManager"), Force: q.Get("force") == "true", Subresource: "scale", FieldValidation: directive})
			for _, w2 := range warnings {
				addWarning(w, w2)
			}
			return obj, err
		}
		scale, err := toScale(cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		next := want
		if pt != "" {
			obj, err := s.applyPatch(w, r, pt, body, scale, scaleGVK, func() runtime.Object { return &autoscalingv1.Scale{} })
			if err != nil {
				return nil, err
			}
			next = obj.(*autoscalingv1.Scale)
		}
		if next.Spec.Replicas < 0 {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, info.Name,
				fieldErrorList("spec.replicas", next.Spec.Replicas, "must be greater than or equal to 0"))
		}
		obj := cur.DeepCopyObject()
		setReplicas(obj, next.Spec.Replicas)
		m, _ := meta.Accessor(obj)
		m.SetResourceVersion(next.ResourceVersion)
		out, err := s.fields.UpdateScale(r.Context(), cur, obj, res.GroupVersionKind(), who)
		if errors.Is(err, fieldmanager.ErrUnknownKind) {
			return obj, nil
		}
		return out, err
	})
	if err != nil {
		return err
	}
	scale, err := toScale(out) // reads out, which may be shared
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return s.respond(w, r, http.StatusOK, t, scaleRes, scale)
}

// serveBinding serves POST pods/{name}/binding.
func (s *Server) serveBinding(w http.ResponseWriter, r *http.Request, res *Resource, info requestInfo) error {
	if info.Verb != "create" {
		return errMethodNotAllowed
	}
	return s.createBinding(w, r, info, info.Name)
}

// createBinding assigns a pod to a node, as the scheduler does: the pod
// gets spec.nodeName and a PodScheduled=True condition. A pod already
// assigned or being deleted answers 409 Conflict.
func (s *Server) createBinding(w http.ResponseWriter, r *http.Request, info requestInfo, podName string) error {
	dry, err := isDryRun(r)
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	obj, err := s.decodeBody(w, r, body, corev1.SchemeGroupVersion.WithKind("Binding"), &corev1.Binding{})
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	if podName == "" {
		podName = b.Name
	}
	if b.Name != "" && b.Name != podName {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", b.Name, podName))
	}
	b.Name, b.Namespace = podName, info.Namespace
	if errs := bindingErrors(b); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, podName, errs)
	}
	pods, _ := s.lookup(gvCore, "pods")
	battr := requestInfo{Verb: "create", GroupVersion: gvCore, Resource: "pods", Subresource: "binding", Namespace: info.Namespace, Name: podName}
	if err := s.admit(r.Context(), attributes(admission.Create, pods, battr, b, nil, dry), nil); err != nil {
		return err
	}
	gr := pods.GroupResource()
	_, _, err = updateStored(r.Context(), s.store, key(pods, info.Namespace, podName), func(cur runtime.Object) (runtime.Object, error) {
		// cur may be the store's own object, shared with every reader:
		// the bound pod is a copy on write of it (bindPod).
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(gr, podName, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", podName))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(gr, podName, fmt.Errorf("pod %s is already assigned to node %q", podName, pod.Spec.NodeName))
		}
		if b.ResourceVersion != "" && b.ResourceVersion != pod.ResourceVersion {
			return nil, apierrors.NewConflict(gr, podName, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(gr, podName, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		bound := bindPod(pod, b, metav1.NewTime(s.now()))
		if dry {
			return nil, errNoop{cur: bound}
		}
		return bound, nil
	})
	if err != nil {
		if _, ok := err.(errNoop); !ok {
			return storageError(err, gr, podName)
		}
	}
	st := &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
	t, err := s.negotiate(r)
	if err != nil {
		t = target{info: s.jsonInfo}
	}
	s.writeObject(w, r, http.StatusCreated, t, st, schema.GroupVersion{Version: "v1"})
	return nil
}

// bindPod returns pod bound to b's target node: spec.nodeName set, b's
// annotations added and a PodScheduled=True condition. pod is not
// modified: the result is a copy of its top-level struct (Spec and Status
// are values in it) with its own annotations map and conditions slice,
// the only parts a binding changes; everything else (containers, volumes,
// managedFields, ...) it shares with pod, read-only like pod itself.
func bindPod(pod *corev1.Pod, b *corev1.Binding, now metav1.Time) *corev1.Pod {
	bound := *pod
	bound.Spec.NodeName = b.Target.Name
	if len(b.Annotations) > 0 {
		bound.Annotations = make(map[string]string, len(pod.Annotations)+len(b.Annotations))
		maps.Copy(bound.Annotations, pod.Annotations)
		maps.Copy(bound.Annotations, b.Annotations)
	}
	bound.Status.Conditions = slices.Clone(pod.Status.Conditions)
	setPodCondition(&bound, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
	return &bound
}

// setPodCondition replaces or appends a condition of the same type.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
