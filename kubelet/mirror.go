package kubelet

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mirrorPods keeps a mirror pod in the API for every static pod, so the
// control plane sees it (and its status): created with the annotation
// kubernetes.io/config.mirror=<hash> and the Node as controlling owner,
// deleted and re-created when it was deleted or no longer matches the
// manifest, and deleted when the manifest goes. Mirror pods without a
// static pod are deleted. Like Kubernetes' kubelet, it needs the Node
// object: mirror pods appear once the node is registered.
type mirrorPods struct{ k *Kubelet }

func newMirrorPods(k *Kubelet) *mirrorPods { return &mirrorPods{k: k} }

// mirrorPodOf returns a static pod's mirror pod, nil when there is none.
func (k *Kubelet) mirrorPodOf(static *corev1.Pod) *corev1.Pod {
	if m := k.cachedPod(static.Namespace, static.Name); m != nil && isMirrorPod(m) {
		return m
	}
	return nil
}

// ensure makes the static pod's mirror current.
func (m *mirrorPods) ensure(ctx context.Context, w *podWorker, pod *corev1.Pod) {
	k := m.k
	hash := pod.Annotations[AnnotationConfigHash]
	mirror := k.mirrorPodOf(pod)
	if mirror != nil && mirror.DeletionTimestamp == nil && mirror.Annotations[AnnotationConfigMirror] == hash {
		return
	}
	if mirror != nil {
		m.deleteObject(ctx, mirror)
		return // re-created once the deletion is seen
	}
	if cached := k.cachedPod(pod.Namespace, pod.Name); cached != nil {
		return // an API pod of that name: not ours to replace
	}
	node := k.node()
	if node == nil {
		return
	}
	mp := pod.DeepCopy()
	mp.UID, mp.ResourceVersion, mp.CreationTimestamp = "", "", metav1.Time{}
	mp.Status = corev1.PodStatus{}
	mp.Annotations[AnnotationConfigMirror] = hash
	controller := true
	mp.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: &controller,
	}}
	if _, err := k.client.CoreV1().Pods(mp.Namespace).Create(ctx, mp, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		k.log.Warn("creating a mirror pod", "pod", podKey(pod), "err", err)
	}
}

// delete removes a static pod's mirror (its manifest is gone).
func (m *mirrorPods) delete(ctx context.Context, pod *corev1.Pod) {
	if mirror := m.k.mirrorPodOf(pod); mirror != nil {
		m.deleteObject(ctx, mirror)
	}
}

// deleteObject deletes a mirror pod at once, if it is still that one.
func (m *mirrorPods) deleteObject(ctx context.Context, mirror *corev1.Pod) {
	zero := int64(0)
	uid := mirror.UID
	err := m.k.client.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		m.k.log.Warn("deleting a mirror pod", "pod", podKey(mirror), "err", err)
	}
}

// mirrorChanged wakes the static pod a mirror pod belongs to; a mirror pod
// of no static pod is deleted once the sources are known.
func (k *Kubelet) mirrorChanged(mirror *corev1.Pod) {
	for _, w := range k.workers.all() {
		w.mu.Lock()
		match := w.static && w.pod != nil && w.pod.Namespace == mirror.Namespace && w.pod.Name == mirror.Name && !w.removed
		w.mu.Unlock()
		if match {
			k.status.requeue(w.uid)
			w.kick()
			return
		}
	}
}

// sweepMirrors deletes mirror pods of static pods that no longer exist.
func (k *Kubelet) sweepMirrors(ctx context.Context) {
	if !k.sourcesReady() {
		return
	}
	statics := map[string]bool{}
	for _, w := range k.workers.all() {
		w.mu.Lock()
		if w.static && w.pod != nil && !w.removed {
			statics[w.pod.Namespace+"/"+w.pod.Name] = true
		}
		w.mu.Unlock()
	}
	for _, obj := range k.podInformer.GetStore().List() {
		p, ok := obj.(*corev1.Pod)
		if !ok || !isMirrorPod(p) || statics[p.Namespace+"/"+p.Name] {
			continue
		}
		k.mirrors.deleteObject(ctx, p)
	}
}
