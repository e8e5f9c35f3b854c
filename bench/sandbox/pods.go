package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/sandbox"
)

// The DNS files every benchmark pod (and OCI bundle) gets, as a kubelet
// would write them for a ClusterFirst pod.
var (
	resolvConf = []byte("search bench.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n")
	hostsFile  = []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
)

const benchNamespace = "bench"

// benchPod is the API object the kubelet would hold: one Burstable
// container, which decides the pod cgroup's QoS tier.
func benchPod(name, uid string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, UID: types.UID(uid)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			}}}}},
	}
}

// sandboxConfig is the pod's RunPodSandbox request.
func sandboxConfig(pod *corev1.Pod, cgroupParent, logDir string, sharePID bool) *sandbox.SandboxConfig {
	return &sandbox.SandboxConfig{
		Pod:          sandbox.PodMeta{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
		Hostname:     pod.Name,
		LogDirectory: logDir,
		ResolvConf:   resolvConf, Hosts: hostsFile, HostnameFile: []byte(pod.Name + "\n"),
		CgroupParent: cgroupParent,
		SharePID:     sharePID,
	}
}

// containerConfig runs `testbox args...` over rootfs.
func containerConfig(rootfs []overlay.Mount, args ...string) *sandbox.ContainerConfig {
	return &sandbox.ContainerConfig{
		Name:    "c",
		Image:   "podkit.bench/testbox:latest",
		ImageID: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
		Command: []string{testboxPath},
		Args:    args,
		Rootfs:  rootfs,
		LogPath: "c/0.log",
	}
}

// exitWatcher turns the runtime's event stream into per-container exit
// notifications stamped when the event arrived.
type exitWatcher struct {
	mu      sync.Mutex
	waiters map[string]chan time.Time
	early   map[string]time.Time
}

func watchExits(ctx context.Context, rt sandbox.EventSource) (*exitWatcher, error) {
	ch, err := rt.Events(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime events: %w", err)
	}
	w := &exitWatcher{waiters: map[string]chan time.Time{}, early: map[string]time.Time{}}
	go func() {
		for e := range ch {
			if e.Type != sandbox.ContainerStopped {
				continue
			}
			at := time.Now()
			w.mu.Lock()
			if c, ok := w.waiters[e.ContainerID]; ok {
				c <- at
				delete(w.waiters, e.ContainerID)
			} else {
				w.early[e.ContainerID] = at
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// expect returns a channel that receives the time container id's exit was
// reported.
func (w *exitWatcher) expect(id string) <-chan time.Time {
	c := make(chan time.Time, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if at, ok := w.early[id]; ok {
		c <- at
		delete(w.early, id)
		return c
	}
	w.waiters[id] = c
	return c
}

// forget drops a pending expectation (the container failed to start).
func (w *exitWatcher) forget(id string) {
	w.mu.Lock()
	delete(w.waiters, id)
	delete(w.early, id)
	w.mu.Unlock()
}

// podState is one pod the benchmark created, with what is needed to remove
// it completely.
type podState struct {
	pod       *corev1.Pod
	cgroup    string
	scratch   *scratch
	sandboxID string
	cid       string
}

// startPod creates a pod cgroup, a sandbox and one started container
// running `testbox args...` (untimed: the memory measurement's helper).
func (n *node) startPod(ctx context.Context, rt *runtimeHandle, name string, sharePID bool, args ...string) (p *podState, err error) {
	uid := name + "-" + randomHex(4)
	p = &podState{pod: benchPod(name, uid)}
	defer func() {
		if err != nil {
			_ = n.removePod(context.WithoutCancel(ctx), rt, p)
			p = nil
		}
	}()
	if p.scratch, err = newScratch(filepath.Join(n.tmpDir, "scratch"), uid, n.lower); err != nil {
		return p, err
	}
	if p.cgroup, err = n.tree.EnsurePod(ctx, p.pod); err != nil {
		return p, err
	}
	sb, err := rt.RunPodSandbox(ctx, sandboxConfig(p.pod, p.cgroup, filepath.Join(n.tmpDir, "logs", uid), sharePID))
	if err != nil {
		return p, err
	}
	p.sandboxID = sb.ID
	if p.cid, err = rt.CreateContainer(ctx, sb.ID, containerConfig(p.scratch.mounts, args...)); err != nil {
		return p, err
	}
	return p, rt.StartContainer(ctx, p.cid)
}

// removePod removes what startPod made.
func (n *node) removePod(ctx context.Context, rt *runtimeHandle, p *podState) error {
	var err error
	if p.sandboxID != "" {
		if err = rt.RemovePodSandbox(ctx, p.sandboxID); err != nil {
			return fmt.Errorf("remove pod %s: %w", p.pod.Name, err)
		}
		p.sandboxID = ""
	}
	if p.cgroup != "" {
		if err = n.tree.Remove(ctx, p.cgroup); err != nil {
			return fmt.Errorf("remove pod %s cgroup: %w", p.pod.Name, err)
		}
		p.cgroup = ""
	}
	if p.scratch != nil {
		if err = p.scratch.remove(); err != nil {
			return err
		}
		p.scratch = nil
	}
	return nil
}
