package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// podTimes is what the benchmark observes of one pod, on its own clock:
// when it sent the create, when the API server answered, and when a watch
// first showed the pod bound to the node and Running.
type podTimes struct {
	create, created, bound, running time.Time
}

// startup is the pod-startup SLI: creation → Running observed.
func (p podTimes) startup() time.Duration { return p.running.Sub(p.create) }

// startPods creates count pods named prefix-i (all at once when burst, else
// one after the other, each waiting for the previous to run) and returns
// what a watch observed of each.
func startPods(ctx context.Context, cl kubernetes.Interface, img, prefix string, count int, burst bool, timeout time.Duration) ([]podTimes, error) {
	w, err := cl.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	times := map[string]*podTimes{}
	var out []podTimes
	create := func(i int) error {
		name := fmt.Sprintf("%s-%d", prefix, i)
		t := &podTimes{create: time.Now()}
		times[name] = t
		_, err := cl.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: new(int64), Containers: []corev1.Container{{
				Name: "c", Image: img, Args: []string{"sleep", "inf"}, ImagePullPolicy: corev1.PullIfNotPresent}}},
		}, metav1.CreateOptions{})
		t.created = time.Now()
		return err
	}
	wait := func(want int) error {
		deadline := time.After(timeout)
		for len(out) < want {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					return fmt.Errorf("watch closed")
				}
				now := time.Now()
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type == watch.Deleted || !strings.HasPrefix(p.Name, prefix+"-") {
					continue
				}
				t := times[p.Name]
				if t == nil || !t.running.IsZero() {
					continue
				}
				if t.bound.IsZero() && p.Spec.NodeName != "" {
					t.bound = now
				}
				if p.Status.Phase == corev1.PodRunning {
					t.running = now
					out = append(out, *t)
				}
			case <-deadline:
				for name, t := range times {
					if !t.running.IsZero() {
						continue
					}
					if p, err := cl.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
						fmt.Fprintf(os.Stderr, "%s: node=%q phase=%s conditions=%v statuses=%v\n", name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
					}
				}
				return fmt.Errorf("%d of %d pods Running after %s", len(out), want, timeout)
			}
		}
		return nil
	}
	if burst {
		for i := 0; i < count; i++ {
			if err := create(i); err != nil {
				return nil, err
			}
		}
		return out, wait(count)
	}
	for i := 0; i < count; i++ {
		if err := create(i); err != nil {
			return nil, err
		}
		if err := wait(i + 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// waitNodeIdle waits until the node holds no more than keep pods: sandbox
// records in its runtime root and pod cgroups in its cgroup tree. A pod
// deleted with grace 0 leaves the API at once while the kubelet still
// tears it down; the next phase must not pay for that.
func waitNodeIdle(runDir, cgroupRoot string, keep int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		sbs, _ := os.ReadDir(filepath.Join(runDir, "sandboxes"))
		cgs := map[string]bool{}
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", cgroupRoot, "*", "pod*"))
		for _, d := range dirs {
			cgs[filepath.Base(d)] = true
		}
		if len(sbs) <= keep && len(cgs) <= keep {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node still holds %d sandboxes and %d pod cgroups after %s", len(sbs), len(cgs), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// deleteAll deletes prefix-0..n-1 (grace 0) and waits until they are gone.
func deleteAll(ctx context.Context, cl kubernetes.Interface, prefix string, n int, timeout time.Duration) error {
	zero := int64(0)
	for i := 0; i < n; i++ {
		if err := cl.CoreV1().Pods("default").Delete(ctx, fmt.Sprintf("%s-%d", prefix, i), metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		l, err := cl.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		left := 0
		for _, p := range l.Items {
			if strings.HasPrefix(p.Name, prefix+"-") {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s pods not gone after %s", prefix, timeout)
}
