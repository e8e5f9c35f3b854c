package kubelet_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

// containerConfig returns the configuration the runtime got for the
// newest container of that name.
func containerEnv(t *testing.T, e *env, name string) []string {
	t.Helper()
	_, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	for _, c := range ctrs {
		if c.Name == name {
			out, err := e.runtime.ExecSync(context.Background(), c.ID, []string{"env"}, 0)
			require.NoError(t, err)
			return strings.Split(strings.TrimSpace(string(out.Stdout)), "\n")
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

func TestEnvironment(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"MODE": "fast", "bad-name": "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = e.client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pw"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.start()
	pod := e.pod("env", []string{"sleep", "inf"})
	c := &pod.Spec.Containers[0]
	c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
	c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	c.Env = []corev1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "MESSAGE", Value: "$(GREETING) world $$(GREETING) $(UNKNOWN)"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}, Key: "password"}}},
		{Name: "OPTIONAL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "x", Optional: ptr(true)}}},
	}
	c.Command = []string{"/bin/testbox"}
	c.Env = append(c.Env, corev1.EnvVar{Name: "HOW_LONG", Value: "inf"})
	c.Args = []string{"sleep", "$(HOW_LONG)"} // args see the environment too
	e.create(pod)
	p := e.waitPod("env", "Running", running)

	got := containerEnv(t, e, "app")
	for _, want := range []string{
		"GREETING=hello", "MESSAGE=hello world $(GREETING) $(UNKNOWN)", "POD_NAME=env", "POD_IP=" + p.Status.PodIP,
		"NODE=" + e.cfg.NodeName, "MEM=64", "MODE=fast", "CFG_MODE=fast", "CFG_bad-name=x", "PASSWORD=s3cret",
	} {
		assert.Contains(t, got, want)
	}
	for _, kv := range got {
		assert.False(t, strings.HasPrefix(kv, "OPTIONAL="), "a missing optional reference is skipped")
	}
}

func TestMissingConfigMapKey(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("env", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "x"}}}}
	e.create(pod)
	p := e.waitPod("env", "CreateContainerConfigError", waitingReason("CreateContainerConfigError"))
	assert.Equal(t, `configmap "later" not found`, containerStatus(p, "app").State.Waiting.Message)
	e.waitEvent("env", `Warning Failed Error: configmap "later" not found`)

	_, err := e.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "later"}, Data: map[string]string{"y": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.step(time.Second)
	p = e.waitPod("env", "a missing key", func(p *corev1.Pod) bool {
		return waitingReason("CreateContainerConfigError")(p) && strings.HasPrefix(containerStatus(p, "app").State.Waiting.Message, "couldn't")
	})
	assert.Equal(t, "couldn't find key x in ConfigMap default/later", containerStatus(p, "app").State.Waiting.Message)
}

func TestFailedMountEvents(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("vol", []string{"sleep", "inf"})
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "scratch", MountPath: "/scratch"}}
	e.create(pod)
	e.waitEvent("vol", `Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "missing" not found`)
	p := e.get("vol")
	assert.Equal(t, corev1.PodPending, p.Status.Phase)
	_, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ctrs)

	_, err = e.client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "missing"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.step(time.Second)
	e.waitPod("vol", "Running", running)
}

func TestTerminationMessages(t *testing.T) {
	e := newEnv(t)
	withScript(t, e, func(s *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
		if c.Name == "logs" {
			return fake.Behavior{Stdout: []string{"it broke"}, Exits: true, ExitCode: 2}
		}
		return fake.Interpret(s, c)
	})
	e.start()
	pod := e.pod("msg", []string{"sleep", "inf"})
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "logs", Image: testImage,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError})
	e.create(pod)
	e.waitPod("msg", "Running", func(p *corev1.Pod) bool { cs := containerStatus(p, "app"); return cs != nil && cs.State.Running != nil })

	// The app writes its termination log, then exits.
	_, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	for _, c := range ctrs {
		if c.Name != "app" {
			continue
		}
		path := c.Annotations[kubelet.AnnotationTerminationLog]
		require.NotEmpty(t, path)
		assert.Equal(t, "/dev/termination-log", c.Annotations[kubelet.AnnotationTerminationMessagePath])
		require.NoError(t, os.WriteFile(path, []byte("all done"), 0o644))
		require.NoError(t, e.runtime.Exit(context.Background(), c.ID, 0))
	}
	p := e.waitPod("msg", "Succeeded or Failed", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodFailed })
	assert.Equal(t, "all done", containerStatus(p, "app").State.Terminated.Message)
	assert.Equal(t, "it broke\n", containerStatus(p, "logs").State.Terminated.Message)
}

func TestLogFile(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("logs", []string{"exit", "1"}))
	p := e.waitPod("logs", "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount >= 1 && cs.State.Waiting != nil
	})
	k := e.kubelet
	path, isRunning, err := k.LogFile("default", "logs", "app", false)
	require.NoError(t, err)
	assert.False(t, isRunning)
	assert.Equal(t, e.cfg.LogDir+"/default_logs_"+string(p.UID)+"/app/1.log", path)

	// Waiting to restart, the current and the previous instance are both
	// the last terminated one, as in Kubernetes.
	prev, _, err := k.LogFile("default", "logs", "app", true)
	require.NoError(t, err)
	assert.Equal(t, path, prev)

	_, _, err = k.LogFile("default", "logs", "nope", false)
	assert.ErrorIs(t, err, kubelet.ErrContainerNotFound)
	_, _, err = k.LogFile("default", "ghost", "app", false)
	assert.ErrorIs(t, err, kubelet.ErrPodNotFound)
}

func TestLogFileOfRunningAndPrevious(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("logs", []string{"sleep", "inf"}))
	p := e.waitPod("logs", "Running", running)
	assert.NoError(t, e.kubelet.Healthy())
	pods := e.kubelet.Pods()
	require.Len(t, pods, 1)
	assert.Equal(t, corev1.PodRunning, pods[0].Status.Phase, "the kubelet's own view")
	one, ok := e.kubelet.Pod("default", "logs")
	require.True(t, ok)
	assert.Equal(t, p.UID, one.UID)
	_, ok = e.kubelet.Pod("default", "ghost")
	assert.False(t, ok)
	path, isRunning, err := e.kubelet.LogFile("default", "logs", "app", false)
	require.NoError(t, err)
	assert.True(t, isRunning)
	assert.Equal(t, e.cfg.LogDir+"/default_logs_"+string(p.UID)+"/app/0.log", path)
	_, _, err = e.kubelet.LogFile("default", "logs", "app", true)
	assert.ErrorIs(t, err, kubelet.ErrNoPrevious)
	assert.EqualError(t, err, `previous terminated container "app" in pod "logs" not found: previous terminated container not found`)

	_, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	require.NoError(t, e.runtime.Exit(context.Background(), ctrs[0].ID, 1))
	e.waitPod("logs", "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil
	})
	prev, isRunning, err := e.kubelet.LogFile("default", "logs", "app", true)
	require.NoError(t, err)
	assert.False(t, isRunning)
	assert.Equal(t, path, prev)
	cur, isRunning, err := e.kubelet.LogFile("default", "logs", "app", false)
	require.NoError(t, err)
	assert.True(t, isRunning)
	assert.Equal(t, e.cfg.LogDir+"/default_logs_"+string(p.UID)+"/app/1.log", cur)
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	e.waitPod("web", "Running", running)
	e.step(time.Second) // a relist updates the gauges
	deadline := time.Now().Add(waitTimeout)
	for metricValue(t, e, "kubelet_running_pods") != 1 {
		require.True(t, time.Now().Before(deadline))
		time.Sleep(10 * time.Millisecond)
	}
	// The running gauges are read at scrape time; the worker's duration is
	// observed when its sync returns, which may be just after the pod is
	// Running: gather until every family has appeared.
	want := []string{"kubelet_pod_start_duration_seconds", "kubelet_pod_start_sli_duration_seconds",
		"kubelet_pod_worker_duration_seconds", "kubelet_running_containers", "kubelet_pod_start_step_duration_seconds"}
	var mfs []*dto.MetricFamily
	names := map[string]bool{}
	for {
		var err error
		mfs, err = e.registry.Gather()
		require.NoError(t, err)
		names = map[string]bool{}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
		if !slices.ContainsFunc(want, func(n string) bool { return !names[n] }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, n := range want {
		assert.True(t, names[n], n)
	}
	for _, mf := range mfs {
		if mf.GetName() == "kubelet_pod_start_duration_seconds" {
			assert.Equal(t, uint64(1), mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
		if mf.GetName() == "kubelet_running_containers" {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "running" {
					assert.Equal(t, 1.0, m.GetGauge().GetValue())
				}
			}
		}
	}
}

// metricValue is the value of an unlabelled gauge.
func metricValue(t *testing.T, e *env, name string) float64 {
	t.Helper()
	mfs, err := e.registry.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
