package kubelet_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/sandbox"
)

func TestPodRunsAndReportsStatus(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	p := e.waitPod("web", "Running and Ready", func(p *corev1.Pod) bool { return running(p) && ready(p) })

	ip, err := netip.ParseAddr(p.Status.PodIP)
	require.NoError(t, err)
	assert.True(t, netip.MustParsePrefix("10.88.0.0/16").Contains(ip), "pod IP %s from the runtime's pod CIDR", ip)
	assert.Equal(t, []corev1.PodIP{{IP: p.Status.PodIP}}, p.Status.PodIPs)
	assert.Equal(t, "192.0.2.10", p.Status.HostIP)
	assert.Equal(t, corev1.PodQOSBestEffort, p.Status.QOSClass)
	require.NotNil(t, p.Status.StartTime)
	for _, typ := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		c := condition(p, typ)
		if assert.NotNil(t, c, "condition %s", typ) {
			assert.Equal(t, corev1.ConditionTrue, c.Status, "condition %s", typ)
		}
	}
	cs := containerStatus(p, "app")
	require.NotNil(t, cs)
	assert.True(t, cs.Ready)
	assert.True(t, *cs.Started)
	assert.Zero(t, cs.RestartCount)
	assert.Equal(t, testImage, cs.Image)
	assert.NotEmpty(t, cs.ImageID)
	assert.Regexp(t, `^podkit://.+`, cs.ContainerID)

	e.waitEvent("web", `Normal Pulled Container image "registry.test/testbox:1" already present on machine`)
	e.waitEvent("web", "Normal Created Created container: app")
	e.waitEvent("web", "Normal Started Started container app")

	// The runtime's objects carry the pod's identity.
	sbs, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	require.Len(t, sbs, 1)
	require.Len(t, ctrs, 1)
	assert.Equal(t, string(p.UID), sbs[0].Labels[kubelet.LabelPodUID])
	assert.Equal(t, sandbox.PodMeta{Name: "web", Namespace: "default", UID: string(p.UID)}, sbs[0].Pod)
	assert.Equal(t, map[string]string{kubelet.LabelPodName: "web", kubelet.LabelPodNamespace: "default",
		kubelet.LabelPodUID: string(p.UID), kubelet.LabelContainerName: "app"}, ctrs[0].Labels)
	assert.Len(t, e.snaps.Active(), 1, "the container's rootfs snapshot")
}

// initPod is a pod with init containers running cmds, then app.
func (e *env) initPod(name string, policy corev1.RestartPolicy, inits ...[]string) *corev1.Pod {
	p := e.pod(name, []string{"sleep", "inf"})
	p.Spec.RestartPolicy = policy
	for i, cmd := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
			Name: "init" + string(rune('1'+i)), Image: testImage, Args: cmd})
	}
	return p
}

// startOrder lists the containers the runtime started, by name, in order.
func (e *env) startOrder() []string {
	names := map[string]string{}
	_, ctrs, _ := e.runtime.List(context.Background())
	for _, c := range ctrs {
		names[c.ID] = c.Name
	}
	var out []string
	for _, c := range e.runtime.Calls() {
		if c.Op == "StartContainer" && c.Err == nil {
			out = append(out, names[c.ID])
		}
	}
	return out
}

func TestInitContainersRunInOrder(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.initPod("web", corev1.RestartPolicyAlways, []string{"print", "one"}, []string{"exit", "0"}))
	p := e.waitPod("web", "Running", running)

	assert.Equal(t, []string{"init1", "init2", "app"}, e.startOrder())
	for _, name := range []string{"init1", "init2"} {
		cs := containerStatus(p, name)
		require.NotNil(t, cs, name)
		require.NotNil(t, cs.State.Terminated, name)
		assert.Equal(t, int32(0), cs.State.Terminated.ExitCode)
		assert.Equal(t, "Completed", cs.State.Terminated.Reason)
		assert.True(t, cs.Ready, "a finished init container is ready")
	}
	assert.Equal(t, corev1.ConditionTrue, condition(p, corev1.PodInitialized).Status)
	e.waitEvent("web", "Normal Started Started container init2")
}

func TestInitContainerFailureWithNeverFailsThePod(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.initPod("web", corev1.RestartPolicyNever, []string{"exit", "0"}, []string{"exit", "3"}))
	p := e.waitPod("web", "Failed", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodFailed })

	cs := containerStatus(p, "init2")
	require.NotNil(t, cs.State.Terminated)
	assert.Equal(t, int32(3), cs.State.Terminated.ExitCode)
	assert.Equal(t, "Error", cs.State.Terminated.Reason)
	assert.Equal(t, []string{"init1", "init2"}, e.startOrder(), "the app container never starts")
	app := containerStatus(p, "app")
	require.NotNil(t, app.State.Waiting)
	assert.Equal(t, "PodInitializing", app.State.Waiting.Reason)
	init := condition(p, corev1.PodInitialized)
	assert.Equal(t, corev1.ConditionFalse, init.Status)
	assert.Equal(t, "ContainersNotInitialized", init.Reason)
	assert.Equal(t, "containers with incomplete status: [init2]", init.Message)
}

func TestInitContainerFailureBlocksAndBacksOff(t *testing.T) {
	e := newEnv(t)
	e.start()
	created := e.create(e.initPod("web", corev1.RestartPolicyAlways, []string{"exit", "1"}))
	p := e.waitPod("web", "init CrashLoopBackOff", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "init1")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := containerStatus(p, "init1")
	assert.Equal(t, "back-off 10s restarting failed container=init1 pod=web_default("+string(created.UID)+")", cs.State.Waiting.Message)
	assert.Equal(t, int32(1), cs.RestartCount)
	require.NotNil(t, cs.LastTerminationState.Terminated)
	assert.Equal(t, int32(1), cs.LastTerminationState.Terminated.ExitCode)
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.NotContains(t, e.startOrder(), "app")
}

func TestFailedSandboxIsRetried(t *testing.T) {
	e := newEnv(t)
	e.runtime.FailNext("RunPodSandbox", errors.New("no IP addresses available in range"))
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	e.waitEvent("web", "Warning FailedCreatePodSandBox Failed to create pod sandbox: fake: injected RunPodSandbox failure: no IP addresses available in range")
	p := e.waitPod("web", "ContainerCreating", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ContainerCreating"
	})
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	assert.Equal(t, corev1.ConditionFalse, condition(p, corev1.PodReadyToStartContainers).Status)
	e.step(time.Second)
	e.waitPod("web", "Running", running)
}

func TestDeadSandboxIsRecreated(t *testing.T) {
	e := newEnv(t, func(c *kubelet.Config) { c.RelistInterval = time.Second })
	e.start()
	e.create(e.initPod("web", corev1.RestartPolicyAlways, []string{"exit", "0"}))
	before := e.waitPod("web", "Running", running)
	sbs, _, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	require.Len(t, sbs, 1)
	// The sandbox dies under the kubelet (its network is gone).
	require.NoError(t, e.runtime.StopPodSandbox(context.Background(), sbs[0].ID))
	after := e.stepUntil("web", "a new sandbox", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return running(p) && cs.RestartCount == 1
	})
	e.waitEvent("web", "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.")
	assert.Equal(t, int32(1), containerStatus(after, "init1").RestartCount, "init containers run again in the new sandbox")
	assert.NotEqual(t, containerStatus(before, "app").ContainerID, containerStatus(after, "app").ContainerID)
	sbs, _, err = e.runtime.List(context.Background())
	require.NoError(t, err)
	var attempts []uint32
	for _, sb := range sbs {
		if sb.State == sandbox.SandboxReady {
			attempts = append(attempts, sb.Pod.Attempt)
		}
	}
	assert.Equal(t, []uint32{1}, attempts)
}

// nodeStatusFunc adapts a function to kubelet.NodeStatus.
type nodeStatusFunc func(ctx context.Context) error

func (f nodeStatusFunc) Run(ctx context.Context) error { return f(ctx) }

func TestNodeStatusRunsAlongsideAndItsFailureStopsRun(t *testing.T) {
	boom := errors.New("cannot register the node")
	ran := make(chan struct{})
	e := newEnv(t, func(c *kubelet.Config) {
		c.NodeStatus = nodeStatusFunc(func(ctx context.Context) error { close(ran); return boom })
	})
	k, err := kubelet.New(e.cfg)
	require.NoError(t, err)
	err = k.Run(context.Background())
	<-ran
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, k.Run(context.Background()), kubelet.ErrAlreadyRunning)
}
