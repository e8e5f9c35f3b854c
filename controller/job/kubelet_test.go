package job_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// outcome is what the fake kubelet makes of a pod.
type outcome struct {
	phase    corev1.PodPhase // Succeeded or Failed; "" runs until deleted
	restarts int32           // container restarts reported while running
}

// fakeKubelet binds pods to node-1, reports them Running and Ready, then
// (per decide) Succeeded or Failed with terminated containers, and
// confirms deletions at once — a kubelet whose containers exit as told.
type fakeKubelet struct {
	t      *testing.T
	c      *cluster
	now    func() time.Time
	decide func(*corev1.Pod) outcome
	queue  workqueue.TypedRateLimitingInterface[string]
	lister interface {
		get(ns, name string) (*corev1.Pod, error)
	}

	mu         sync.Mutex
	running    int // non-terminal pods existing now
	maxRunning int
	seen       map[string]bool // pods counted in running
}

type podGetter struct{ inf cache.SharedIndexInformer }

func (g podGetter) get(ns, name string) (*corev1.Pod, error) {
	obj, ok, err := g.inf.GetStore().GetByKey(ns + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	return obj.(*corev1.Pod), nil
}

func startKubelet(t *testing.T, c *cluster, now func() time.Time, decide func(*corev1.Pod) outcome) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{t: t, c: c, now: now, decide: decide, seen: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	factory := informers.NewSharedInformerFactory(c.client, 0)
	inf := factory.Core().V1().Pods().Informer()
	k.lister = podGetter{inf}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.observe(obj) },
		UpdateFunc: func(_, obj any) { k.observe(obj) },
		DeleteFunc: func(obj any) { k.gone(obj) },
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for k.work(ctx) {
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

func (k *fakeKubelet) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key := p.Namespace + "/" + p.Name
	k.mu.Lock()
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil
	switch {
	case !terminal && !k.seen[key]:
		k.seen[key] = true
		k.running++
		k.maxRunning = max(k.maxRunning, k.running)
	case terminal && k.seen[key]:
		delete(k.seen, key)
		k.running--
	}
	k.mu.Unlock()
	k.queue.Add(key)
}

func (k *fakeKubelet) gone(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		k.mu.Lock()
		if k.seen[p.Namespace+"/"+p.Name] {
			delete(k.seen, p.Namespace+"/"+p.Name)
			k.running--
		}
		k.mu.Unlock()
	}
}

// MaxRunning is the most pods that were running at the same time.
func (k *fakeKubelet) MaxRunning() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maxRunning
}

func (k *fakeKubelet) work(ctx context.Context) bool {
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

func (k *fakeKubelet) sync(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	p, err := k.lister.get(ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	pods := k.c.client.CoreV1().Pods(ns)
	if p.DeletionTimestamp != nil {
		err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	if p.Spec.NodeName == "" {
		err := pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err // the update event brings the pod back
	}
	want := k.decide(p)
	now := metav1.NewTime(k.now())
	p = p.DeepCopy()
	if p.Status.Phase != corev1.PodRunning {
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &now
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name, Ready: true,
			RestartCount: want.restarts, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		_, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err // the update event brings it back for the exit
	}
	if want.phase == "" {
		return nil
	}
	code := int32(0)
	if want.phase == corev1.PodFailed {
		code = 1
	}
	p.Status.Phase = want.phase
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady || p.Status.Conditions[i].Type == corev1.ContainersReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].LastTransitionTime = now
		}
	}
	p.Status.ContainerStatuses[0].Ready = false
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: now}}
	_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
