package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// ErrCannotAdopt wraps the reason a controller may not adopt orphans now
// (it is being deleted, or the cached object is stale).
var ErrCannotAdopt = errors.New("cannot adopt")

// OwnerRef returns the controller owner reference Kubernetes' controllers
// put on what they create or adopt: controller=true and
// blockOwnerDeletion=true (so foreground deletion of the owner waits).
func OwnerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{
		APIVersion:         gvk.GroupVersion().String(),
		Kind:               gvk.Kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         &yes,
		BlockOwnerDeletion: &yes,
	}
}

// RefManager decides, for the objects a controller's selector could match,
// which ones it owns, adopting matching orphans and releasing owned objects
// that no longer match (Kubernetes' ControllerRefManager semantics):
//
//   - owned by another controller: never touched;
//   - owned by this one and matching: claimed;
//   - owned by this one, not matching: released (ownerReference removed),
//     unless this controller is being deleted;
//   - orphan and matching: adopted (ownerReference added) unless either it
//     or this controller is being deleted, after CanAdopt agreed once.
type RefManager struct {
	Controller metav1.Object
	Kind       schema.GroupVersionKind
	Selector   labels.Selector
	// CanAdopt is called once, before the first adoption, to re-check with
	// a live read that the controller still exists with the same UID and is
	// not being deleted (see RecheckDeletionTimestamp). Nil allows.
	CanAdopt func(ctx context.Context) error

	once     sync.Once
	adoptErr error
}

// RecheckDeletionTimestamp returns a CanAdopt that reads the controller
// with get and refuses adoption when it is being deleted.
func RecheckDeletionTimestamp(get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		obj, err := get(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCannotAdopt, err)
		}
		if obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%w: %s/%s has just been deleted at %v", ErrCannotAdopt, obj.GetNamespace(), obj.GetName(), obj.GetDeletionTimestamp())
		}
		return nil
	}
}

// FreshUID returns a get function for RecheckDeletionTimestamp that also
// fails when the live object's UID differs from uid (it was recreated).
func FreshUID(uid types.UID, get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) (metav1.Object, error) {
	return func(ctx context.Context) (metav1.Object, error) {
		obj, err := get(ctx)
		if err != nil {
			return nil, err
		}
		if obj.GetUID() != uid {
			return nil, fmt.Errorf("original %s/%s is gone: got uid %v, wanted %v", obj.GetNamespace(), obj.GetName(), obj.GetUID(), uid)
		}
		return obj, nil
	}
}

func (m *RefManager) canAdopt(ctx context.Context) error {
	m.once.Do(func() {
		if m.CanAdopt != nil {
			m.adoptErr = m.CanAdopt(ctx)
		}
	})
	return m.adoptErr
}

// Claim applies the rules to one object. adopt and release perform the
// API writes; a NotFound from either means the object is gone and is not
// an error.
func (m *RefManager) Claim(ctx context.Context, obj metav1.Object, match func(metav1.Object) bool,
	adopt, release func(context.Context, metav1.Object) error) (bool, error) {
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != m.Controller.GetUID() {
			return false, nil
		}
		if match(obj) {
			return true, nil
		}
		if m.Controller.GetDeletionTimestamp() != nil {
			return false, nil
		}
		if err := release(ctx, obj); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				return false, nil // gone, or replaced by a new object (UID precondition)
			}
			return false, err
		}
		return false, nil
	}
	if m.Controller.GetDeletionTimestamp() != nil || !match(obj) || obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	if ns := m.Controller.GetNamespace(); ns != "" && ns != obj.GetNamespace() {
		return false, nil
	}
	if err := m.canAdopt(ctx); err != nil {
		return false, fmt.Errorf("adopting %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if err := adopt(ctx, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// AdoptPatch is the strategic merge patch that adds ref to the object with
// uid (the uid makes the write fail if the object was replaced).
func AdoptPatch(ref *metav1.OwnerReference, uid types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []*metav1.OwnerReference{ref},
		"uid":             uid,
	}})
	return b
}

// ReleasePatch is the strategic merge patch that removes the owner
// reference to ownerUID from the object with uid.
func ReleasePatch(ownerUID, uid types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{"$patch": "delete", "uid": ownerUID}},
		"uid":             uid,
	}})
	return b
}

// ClaimPods claims pods (usually all pods of the namespace from the
// lister) and returns those the controller owns afterwards. A pod matches
// when the selector matches its labels and every filter accepts it. Errors
// of single pods are joined; the claimed list is complete regardless.
func (m *RefManager) ClaimPods(ctx context.Context, client kubernetes.Interface, pods []*corev1.Pod, filters ...func(*corev1.Pod) bool) ([]*corev1.Pod, error) {
	match := func(o metav1.Object) bool {
		p := o.(*corev1.Pod)
		if !m.Selector.Matches(labels.Set(p.Labels)) {
			return false
		}
		for _, f := range filters {
			if !f(p) {
				return false
			}
		}
		return true
	}
	patch := func(ctx context.Context, o metav1.Object, data []byte) error {
		_, err := client.CoreV1().Pods(o.GetNamespace()).Patch(ctx, o.GetName(), types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
	var claimed []*corev1.Pod
	var errs []error
	for _, p := range pods {
		ok, err := m.Claim(ctx, p, match,
			func(ctx context.Context, o metav1.Object) error {
				return patch(ctx, o, AdoptPatch(OwnerRef(m.Controller, m.Kind), o.GetUID()))
			},
			func(ctx context.Context, o metav1.Object) error {
				return patch(ctx, o, ReleasePatch(m.Controller.GetUID(), o.GetUID()))
			})
		if err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
		}
		if ok {
			claimed = append(claimed, p)
		}
	}
	return claimed, errors.Join(errs...)
}

// ClaimReplicaSets is ClaimPods for the ReplicaSets of a Deployment.
func (m *RefManager) ClaimReplicaSets(ctx context.Context, client kubernetes.Interface, rss []*appsv1.ReplicaSet) ([]*appsv1.ReplicaSet, error) {
	match := func(o metav1.Object) bool { return m.Selector.Matches(labels.Set(o.GetLabels())) }
	patch := func(ctx context.Context, o metav1.Object, data []byte) error {
		_, err := client.AppsV1().ReplicaSets(o.GetNamespace()).Patch(ctx, o.GetName(), types.StrategicMergePatchType, data, metav1.PatchOptions{})
		return err
	}
	var claimed []*appsv1.ReplicaSet
	var errs []error
	for _, rs := range rss {
		ok, err := m.Claim(ctx, rs, match,
			func(ctx context.Context, o metav1.Object) error {
				return patch(ctx, o, AdoptPatch(OwnerRef(m.Controller, m.Kind), o.GetUID()))
			},
			func(ctx context.Context, o metav1.Object) error {
				return patch(ctx, o, ReleasePatch(m.Controller.GetUID(), o.GetUID()))
			})
		if err != nil {
			errs = append(errs, fmt.Errorf("replicaset %s/%s: %w", rs.Namespace, rs.Name, err))
		}
		if ok {
			claimed = append(claimed, rs)
		}
	}
	return claimed, errors.Join(errs...)
}
