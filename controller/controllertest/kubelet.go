package controllertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// KubeletConfig configures a FakeKubelet.
type KubeletConfig struct {
	// Nodes are the fake nodes (created Ready if missing); default "node-1".
	Nodes []string
	// Schedule makes the kubelet also bind unscheduled pods, round-robin
	// over Nodes (there is no scheduler in controller tests).
	Schedule bool
	// Workers is the number of pods handled concurrently (default 4).
	Workers int
	// Ready decides whether a running pod is reported Ready; nil means
	// always. Change it with SetReady.
	Ready func(*corev1.Pod) bool
}

// FakeKubelet plays the kubelets of fake nodes: pods bound to its nodes are
// reported Running (and Ready, see KubeletConfig.Ready) with the conditions
// and container statuses a real kubelet writes, and pods being deleted are
// removed at once, as a kubelet does after the containers stopped.
type FakeKubelet struct {
	client kubernetes.Interface
	nodes  map[string]bool
	order  []string
	sched  bool
	next   atomic.Uint64
	ready  atomic.Pointer[func(*corev1.Pod) bool]
	queue  workqueue.TypedRateLimitingInterface[string]
	lister corelisters.PodLister
	ipSeq  atomic.Uint32
}

// StartFakeKubelet starts a fake kubelet until the test ends.
func StartFakeKubelet(t testing.TB, client kubernetes.Interface, cfg KubeletConfig) *FakeKubelet {
	t.Helper()
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []string{"node-1"}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	k := &FakeKubelet{
		client: client,
		nodes:  map[string]bool{},
		order:  cfg.Nodes,
		sched:  cfg.Schedule,
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second)),
	}
	k.SetReady(cfg.Ready)
	ctx, cancel := context.WithCancel(context.Background())
	for _, n := range cfg.Nodes {
		k.nodes[n] = true
		require.NoError(t, k.ensureNode(ctx, n))
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Pods()
	k.lister = inf.Lister()
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.enqueue,
		UpdateFunc: func(_, cur any) { k.enqueue(cur) },
	})
	require.NoError(t, err)
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Go(func() {
			for k.processNext(ctx) {
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		k.queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	})
	return k
}

// SetReady replaces the readiness decision and re-examines every pod.
func (k *FakeKubelet) SetReady(ready func(*corev1.Pod) bool) {
	if ready == nil {
		ready = func(*corev1.Pod) bool { return true }
	}
	k.ready.Store(&ready)
	if k.lister == nil {
		return
	}
	pods, _ := k.lister.List(labels.Everything())
	for _, p := range pods {
		k.enqueue(p)
	}
}

func (k *FakeKubelet) ensureNode(ctx context.Context, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
	}
	created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating fake node %s: %w", name, err)
	}
	now := metav1.Now()
	created.Status = corev1.NodeStatus{
		Phase: corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "fake kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourcePods: resource.MustParse("100000"),
		},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti"),
			corev1.ResourcePods: resource.MustParse("100000"),
		},
	}
	if _, err := k.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("reporting fake node %s ready: %w", name, err)
	}
	return nil
}

func (k *FakeKubelet) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		k.queue.Add(key)
	}
}

func (k *FakeKubelet) processNext(ctx context.Context) bool {
	key, quit := k.queue.Get()
	if quit {
		return false
	}
	defer k.queue.Done(key)
	if err := k.sync(ctx, key); err != nil && ctx.Err() == nil {
		k.queue.AddRateLimited(key)
		return true
	}
	k.queue.Forget(key)
	return true
}

func (k *FakeKubelet) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	pod, err := k.lister.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pods := k.client.CoreV1().Pods(ns)
	switch {
	case pod.Spec.NodeName == "":
		if !k.sched || pod.DeletionTimestamp != nil {
			return nil
		}
		node := k.order[int(k.next.Add(1)-1)%len(k.order)]
		err := pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case !k.nodes[pod.Spec.NodeName]:
		return nil
	case pod.DeletionTimestamp != nil:
		zero := int64(0)
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return nil
	}
	ready := (*k.ready.Load())(pod)
	if pod.Status.Phase == corev1.PodRunning && isReady(pod) == ready {
		return nil
	}
	updated := pod.DeepCopy()
	k.setRunning(updated, ready)
	_, err = pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setRunning writes the status a kubelet reports for a started pod.
func (k *FakeKubelet) setRunning(p *corev1.Pod, ready bool) {
	now := metav1.Now()
	st := &p.Status
	if st.Phase != corev1.PodRunning {
		st.Phase = corev1.PodRunning
		st.StartTime = &now
		n := k.ipSeq.Add(1)
		st.PodIP = fmt.Sprintf("10.%d.%d.%d", 200+(n>>16)%50, (n>>8)%256, n%256)
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		st.HostIP = "127.0.0.1"
	}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	setCond := func(t corev1.PodConditionType, s corev1.ConditionStatus) {
		for i := range st.Conditions {
			if st.Conditions[i].Type == t {
				if st.Conditions[i].Status != s {
					st.Conditions[i].Status = s
					st.Conditions[i].LastTransitionTime = now
				}
				return
			}
		}
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
	}
	setCond(corev1.PodScheduled, corev1.ConditionTrue)
	setCond(corev1.PodInitialized, corev1.ConditionTrue)
	setCond(corev1.ContainersReady, readyStatus)
	setCond(corev1.PodReady, readyStatus)
	st.ContainerStatuses = st.ContainerStatuses[:0]
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
			Ready: ready, Started: &ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: *st.StartTime}},
		})
	}
}
