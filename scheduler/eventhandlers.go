package scheduler

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// nonTerminalPods selects the pods the scheduler watches, as kube-scheduler:
// every pod that has not succeeded or failed, assigned or not.
var nonTerminalPods = fields.ParseSelectorOrDie("status.phase!=" + string(corev1.PodSucceeded) +
	",status.phase!=" + string(corev1.PodFailed)).String()

func newPodInformer(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	inf := coreinformers.NewFilteredPodInformer(cs, metav1.NamespaceAll, resync, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = nonTerminalPods })
	_ = inf.SetTransform(stripManagedFields)
	return inf
}

// stripManagedFields drops managedFields, which the scheduler never reads,
// from cached objects.
func stripManagedFields(obj any) (any, error) {
	if acc, ok := obj.(metav1.ObjectMetaAccessor); ok && acc.GetObjectMeta() != nil {
		acc.GetObjectMeta().SetManagedFields(nil)
	}
	return obj, nil
}

func assignedPod(pod *corev1.Pod) bool { return pod.Spec.NodeName != "" }

func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// podOf unwraps informer objects, tombstones included.
func podOf(obj any) *corev1.Pod {
	switch t := obj.(type) {
	case *corev1.Pod:
		return t
	case cache.DeletedFinalStateUnknown:
		p, _ := t.Obj.(*corev1.Pod)
		return p
	}
	return nil
}

func nodeOf(obj any) *corev1.Node {
	switch t := obj.(type) {
	case *corev1.Node:
		return t
	case cache.DeletedFinalStateUnknown:
		n, _ := t.Obj.(*corev1.Node)
		return n
	}
	return nil
}

// addEventHandlers wires the informers to the cache and the queue.
func (s *Scheduler) addEventHandlers() error {
	podInf := s.informers.InformerFor(&corev1.Pod{}, func(cs kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return newPodInformer(cs, resync)
	})
	s.podLister = corelisters.NewPodLister(podInf.GetIndexer())
	nsInf := s.informers.Core().V1().Namespaces()
	s.nsLister = nsInf.Lister()

	// Bound pods feed the cache.
	reg, err := podInf.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			p := podOf(obj)
			return p != nil && assignedPod(p) && !terminal(p)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.addAssignedPod(podOf(obj)) },
			UpdateFunc: func(old, obj any) { s.updateAssignedPod(podOf(old), podOf(obj)) },
			DeleteFunc: func(obj any) { s.deleteAssignedPod(podOf(obj)) },
		},
	})
	if err != nil {
		return fmt.Errorf("adding pod handler: %w", err)
	}
	s.handlersSynced = append(s.handlersSynced, reg.HasSynced)
	// Pending pods of our profiles feed the queue.
	reg, err = podInf.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			p := podOf(obj)
			if p == nil || assignedPod(p) || terminal(p) {
				return false
			}
			_, ok := s.profiles[schedulerNameOf(p)]
			return ok
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.queue.Add(podOf(obj)) },
			UpdateFunc: func(old, obj any) { s.updatePendingPod(podOf(old), podOf(obj)) },
			DeleteFunc: func(obj any) { s.deletePendingPod(podOf(obj)) },
		},
	})
	if err != nil {
		return fmt.Errorf("adding pod handler: %w", err)
	}
	s.handlersSynced = append(s.handlersSynced, reg.HasSynced)
	reg, err = s.informers.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.addNode(nodeOf(obj)) },
		UpdateFunc: func(old, obj any) { s.updateNode(nodeOf(old), nodeOf(obj)) },
		DeleteFunc: func(obj any) { s.deleteNode(nodeOf(obj)) },
	})
	if err != nil {
		return fmt.Errorf("adding node handler: %w", err)
	}
	s.handlersSynced = append(s.handlersSynced, reg.HasSynced, nsInf.Informer().HasSynced)
	return nil
}

func (s *Scheduler) addAssignedPod(pod *corev1.Pod) {
	if err := s.cache.AddPod(pod); err != nil {
		s.log.Error("adding pod to the cache", "pod", podKey(pod), "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(PodAdd)
}

func (s *Scheduler) updateAssignedPod(old, pod *corev1.Pod) {
	if err := s.cache.UpdatePod(old, pod); err != nil {
		s.log.Error("updating pod in the cache", "pod", podKey(pod), "err", err)
	}
	// Labels matter to affinity and spreading, requests (resize) to fit.
	if old == nil || !reflect.DeepEqual(old.Labels, pod.Labels) || requestsChanged(old, pod) {
		s.queue.MoveAllToActiveOrBackoffQueue(PodUpdate)
	}
}

func requestsChanged(old, pod *corev1.Pod) bool {
	if len(old.Spec.Containers) != len(pod.Spec.Containers) || len(old.Spec.InitContainers) != len(pod.Spec.InitContainers) {
		return true
	}
	for i := range pod.Spec.Containers {
		if !reflect.DeepEqual(old.Spec.Containers[i].Resources.Requests, pod.Spec.Containers[i].Resources.Requests) {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if !reflect.DeepEqual(old.Spec.InitContainers[i].Resources.Requests, pod.Spec.InitContainers[i].Resources.Requests) {
			return true
		}
	}
	return !reflect.DeepEqual(old.Spec.Overhead, pod.Spec.Overhead) || !reflect.DeepEqual(old.Spec.Resources, pod.Spec.Resources)
}

func (s *Scheduler) deleteAssignedPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	if err := s.cache.RemovePod(pod); err != nil {
		s.log.Debug("removing pod from the cache", "pod", podKey(pod), "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(PodDelete)
}

func (s *Scheduler) updatePendingPod(old, pod *corev1.Pod) {
	if old != nil && old.ResourceVersion == pod.ResourceVersion {
		return // a resync, nothing changed
	}
	if s.cache.IsAssumedPod(pod) && !podUpdated(old, pod) {
		return // our own binding in flight
	}
	s.queue.Update(old, pod)
}

func (s *Scheduler) deletePendingPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	s.queue.Delete(pod)
	// The filtered handler also "deletes" a pod that just got bound (it
	// leaves the pending set); the informer's store still has it then.
	if cur, err := s.podLister.Pods(pod.Namespace).Get(pod.Name); err == nil && cur.UID == pod.UID {
		return
	}
	// A pod deleted while its binding was in flight frees what it assumed.
	if s.cache.IsAssumedPod(pod) {
		if err := s.cache.RemovePod(pod); err == nil {
			s.queue.MoveAllToActiveOrBackoffQueue(PodDelete)
		}
	}
}

func (s *Scheduler) addNode(node *corev1.Node) {
	if node == nil {
		return
	}
	s.cache.AddNode(node)
	s.queue.MoveAllToActiveOrBackoffQueue(NodeAdd)
}

func (s *Scheduler) updateNode(old, node *corev1.Node) {
	if node == nil {
		return
	}
	s.cache.UpdateNode(old, node)
	if old == nil || nodeSchedulingPropertiesChanged(old, node) {
		s.queue.MoveAllToActiveOrBackoffQueue(NodeUpdate)
	}
}

func (s *Scheduler) deleteNode(node *corev1.Node) {
	if node == nil {
		return
	}
	if err := s.cache.RemoveNode(node); err != nil {
		s.log.Debug("removing node from the cache", "node", node.Name, "err", err)
	}
	s.queue.MoveAllToActiveOrBackoffQueue(NodeDelete)
}

// nodeSchedulingPropertiesChanged reports changes that can make a pod fit:
// unschedulable flag, allocatable, labels, taints, conditions or images.
// Heartbeats alone do not wake unschedulable pods.
func nodeSchedulingPropertiesChanged(old, n *corev1.Node) bool {
	if old.Spec.Unschedulable != n.Spec.Unschedulable ||
		!reflect.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		!reflect.DeepEqual(old.Labels, n.Labels) ||
		!reflect.DeepEqual(old.Spec.Taints, n.Spec.Taints) ||
		!reflect.DeepEqual(old.Status.Images, n.Status.Images) {
		return true
	}
	if len(old.Status.Conditions) != len(n.Status.Conditions) {
		return true
	}
	for i := range n.Status.Conditions {
		a, b := old.Status.Conditions[i], n.Status.Conditions[i]
		if a.Type != b.Type || a.Status != b.Status {
			return true
		}
	}
	return false
}
