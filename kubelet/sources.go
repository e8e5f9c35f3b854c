package kubelet

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// newInformers builds the informers of the node's pods
// (spec.nodeName=<node>) and of its Node object.
func (k *Kubelet) newInformers() {
	pf := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	nf := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", k.cfg.NodeName).String()
		}))
	k.podFactory, k.nodeFactory = pf, nf
	k.podInformer = pf.Core().V1().Pods().Informer()
	k.nodeInformer = nf.Core().V1().Nodes().Informer()
	// The registration's HasSynced turns true once the handler (not only
	// the store) has seen every pod of the initial list.
	k.podHandler, _ = k.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { k.podAdded(obj) },
		UpdateFunc: func(_, obj any) {
			k.podAdded(obj)
			if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == k.cfg.NodeName && !isMirrorPod(pod) {
				k.status.reconcile(pod)
			}
		},
		DeleteFunc: k.podDeleted,
	})
	k.nodeHandler, _ = k.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.nodeChanged(nil, obj) },
		UpdateFunc: k.nodeChanged,
	})
}

// podAdded routes an API pod to its worker; mirror pods go to their static
// pod's worker instead.
func (k *Kubelet) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	if isMirrorPod(pod) {
		k.mirrorChanged(pod)
		return
	}
	k.workers.update(pod, false)
}

// podDeleted tells the worker its pod is gone from the API.
func (k *Kubelet) podDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if isMirrorPod(pod) {
		k.mirrorChanged(pod)
		return
	}
	k.workers.remove(pod.UID)
}

// nodeChanged wakes the static pods (their mirrors need the Node) and,
// when the node's addresses changed (pods report them as hostIPs), every
// pod.
func (k *Kubelet) nodeChanged(oldObj, newObj any) {
	o, _ := oldObj.(*corev1.Node)
	n, _ := newObj.(*corev1.Node)
	all := o == nil || n == nil || !equality.Semantic.DeepEqual(o.Status.Addresses, n.Status.Addresses)
	for _, w := range k.workers.all() {
		w.mu.Lock()
		static := w.static
		w.mu.Unlock()
		if static || all {
			w.kick()
		}
	}
}

// sourcesReady says every source has delivered its initial pods, so a pod
// the runtime holds and no source knows is an orphan.
func (k *Kubelet) sourcesReady() bool {
	if k.podHandler == nil || !k.podHandler.HasSynced() {
		return false
	}
	return k.static == nil || k.static.loaded()
}

// cachedPod returns the informer's copy of an API pod, nil when unknown.
func (k *Kubelet) cachedPod(namespace, name string) *corev1.Pod {
	if k.podInformer == nil {
		return nil
	}
	obj, ok, err := k.podInformer.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// node returns the Node object, nil until it exists.
func (k *Kubelet) node() *corev1.Node {
	if k.nodeInformer == nil {
		return nil
	}
	obj, ok, err := k.nodeInformer.GetStore().GetByKey(k.cfg.NodeName)
	if err != nil || !ok {
		return nil
	}
	n, _ := obj.(*corev1.Node)
	return n
}

// allocatable returns the node's allocatable resources (nil unknown).
func (k *Kubelet) allocatable() corev1.ResourceList {
	if n := k.node(); n != nil {
		return n.Status.Allocatable
	}
	return nil
}

// nodeIPs returns Config.NodeIPs, else the Node's InternalIP addresses,
// else its ExternalIP addresses.
func (k *Kubelet) nodeIPs() []netip.Addr {
	if len(k.cfg.NodeIPs) > 0 {
		return k.cfg.NodeIPs
	}
	n := k.node()
	if n == nil {
		return nil
	}
	for _, typ := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
		var out []netip.Addr
		for _, a := range n.Status.Addresses {
			if a.Type != typ {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				out = append(out, ip)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}
