package kubelet_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/fake"
)

// recorder wraps the fake runtime and records the order of lifecycle
// calls and the grace periods of stops; a preStop exec may take time.
type recorder struct {
	*fake.Runner
	e *env

	mu     sync.Mutex
	ops    []string
	graces []time.Duration
	// hookTakes is how long each exec "takes" (the fake clock is stepped).
	hookTakes time.Duration
}

func (r *recorder) record(op string) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

func (r *recorder) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*sandbox.ExecResult, error) {
	r.record("ExecSync")
	if r.hookTakes > 0 {
		r.e.clock.Step(r.hookTakes)
	}
	return r.Runner.ExecSync(ctx, id, cmd, timeout)
}

func (r *recorder) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	r.ops = append(r.ops, "StopContainer")
	r.graces = append(r.graces, grace)
	r.mu.Unlock()
	return r.Runner.StopContainer(ctx, id, grace)
}

func (r *recorder) StopPodSandbox(ctx context.Context, id string) error {
	r.record("StopPodSandbox")
	return r.Runner.StopPodSandbox(ctx, id)
}

func (r *recorder) RemoveContainer(ctx context.Context, id string) error {
	r.record("RemoveContainer")
	return r.Runner.RemoveContainer(ctx, id)
}

func (r *recorder) RemovePodSandbox(ctx context.Context, id string) error {
	r.record("RemovePodSandbox")
	return r.Runner.RemovePodSandbox(ctx, id)
}

func (r *recorder) calls() ([]string, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops), slices.Clone(r.graces)
}

func withRecorder(e *env) *recorder {
	r := &recorder{Runner: e.runtime, e: e}
	e.cfg.Runtime = r
	return r
}

// watchDeletion returns a channel that gets the pod's last state when it is
// deleted from the API.
func (e *env) watchDeletion(name string) <-chan *corev1.Pod {
	e.t.Helper()
	w, err := e.client.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(e.t, err)
	out := make(chan *corev1.Pod, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				out <- ev.Object.(*corev1.Pod)
				return
			}
		}
	}()
	e.t.Cleanup(w.Stop)
	return out
}

func TestGracefulDeletion(t *testing.T) {
	e := newEnv(t)
	rec := withRecorder(e)
	rec.hookTakes = 4 * time.Second
	e.start()
	pod := e.pod("web", []string{"term-exit", "0"})
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(10))
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	e.create(pod)
	p := e.waitPod("web", "Running", running)
	podDir := e.cfg.RootDir + "/pods/" + string(p.UID)
	require.DirExists(t, podDir)
	deleted := e.watchDeletion("web")

	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}))
	var final *corev1.Pod
	select {
	case final = <-deleted:
	case <-time.After(waitTimeout):
		t.Fatalf("the kubelet never deleted the pod:\n%s", dump(e.get("web")))
	}
	assert.Equal(t, corev1.PodSucceeded, final.Status.Phase, "the final status is written before the object is deleted:\n%s", dump(final))
	term := containerStatus(final, "app").State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, int32(0), term.ExitCode)

	ops, graces := rec.calls()
	order := []string{"ExecSync", "StopContainer", "StopPodSandbox", "RemoveContainer", "RemovePodSandbox"}
	last := -1
	for _, op := range order {
		i := slices.Index(ops, op)
		require.GreaterOrEqual(t, i, 0, "%s in %v", op, ops)
		assert.Greater(t, i, last, "%s after %v in %v", op, order, ops)
		last = i
	}
	assert.Equal(t, []time.Duration{6 * time.Second}, graces, "the preStop hook's 4s count against the 10s grace period")
	e.waitEvent("web", "Normal Killing Stopping container app")

	// Nothing of the pod is left.
	sbs, ctrs, err := e.runtime.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, sbs)
	assert.Empty(t, ctrs)
	assert.Empty(t, e.snaps.Active())
	assert.NoDirExists(t, podDir)
	ents, _ := os.ReadDir(e.cfg.LogDir)
	assert.Empty(t, ents, "log directories")
}

func TestGracePeriodOfTheDeletionAndItsMinimum(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace int64
		want  time.Duration
	}{
		{"deletion grace", 5, 5 * time.Second},
		{"at least two seconds", 1, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := withRecorder(e)
			e.start()
			e.create(e.pod("web", []string{"sleep", "inf"}))
			e.waitPod("web", "Running", running)
			deleted := e.watchDeletion("web")
			require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web",
				metav1.DeleteOptions{GracePeriodSeconds: ptr(tc.grace)}))
			select {
			case <-deleted:
			case <-time.After(waitTimeout):
				t.Fatal("not deleted")
			}
			_, graces := rec.calls()
			assert.Equal(t, []time.Duration{tc.want}, graces)
		})
	}
}

func TestStopWaitsForTheGracePeriod(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("stubborn", []string{"ignore-term"})
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(10))
	e.create(pod)
	e.waitPod("stubborn", "Running", running)
	deleted := e.watchDeletion("stubborn")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "stubborn", metav1.DeleteOptions{}))
	e.waitEvent("stubborn", "Normal Killing Stopping container app")
	// SIGTERM is ignored: only the end of the grace period kills it.
	var final *corev1.Pod
	for final == nil {
		select {
		case final = <-deleted:
		case <-time.After(50 * time.Millisecond):
			e.step(time.Second)
		}
	}
	term := containerStatus(final, "app").State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, int32(137), term.ExitCode, "SIGKILL after the grace period")
	assert.Equal(t, corev1.PodFailed, final.Status.Phase)
}

func TestForcedDeletionTearsDown(t *testing.T) {
	e := newEnv(t)
	e.start()
	e.create(e.pod("web", []string{"sleep", "inf"}))
	e.waitPod("web", "Running", running)
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web",
		metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}))
	deadline := time.Now().Add(waitTimeout)
	for {
		sbs, ctrs, err := e.runtime.List(context.Background())
		require.NoError(t, err)
		if len(sbs) == 0 && len(ctrs) == 0 && len(e.snaps.Active()) == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "pod left on the node: %d sandboxes, %d containers", len(sbs), len(ctrs))
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCompletedPodKeepsStatusAndReleasesResources(t *testing.T) {
	e := newEnv(t)
	e.start()
	pod := e.pod("job", []string{"print", "done"})
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	e.create(pod)
	p := e.waitPod("job", "Succeeded", func(p *corev1.Pod) bool { return p != nil && p.Status.Phase == corev1.PodSucceeded })
	term := containerStatus(p, "app").State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, "Completed", term.Reason)
	assert.Equal(t, "PodCompleted", condition(p, corev1.PodReady).Reason)
	// The sandbox is stopped; the exited container stays for its logs.
	deadline := time.Now().Add(waitTimeout)
	for {
		sbs, ctrs, err := e.runtime.List(context.Background())
		require.NoError(t, err)
		if len(sbs) == 1 && sbs[0].State == sandbox.SandboxNotReady {
			require.Len(t, ctrs, 1)
			break
		}
		require.True(t, time.Now().Before(deadline), "sandbox never stopped")
		time.Sleep(10 * time.Millisecond)
	}
	// Deleting it removes everything, with no grace period to wait for.
	deleted := e.watchDeletion("job")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "job", metav1.DeleteOptions{}))
	<-deleted
}

func TestFailedPreStopHookStillStops(t *testing.T) {
	e := newEnv(t)
	withScript(t, e, func(s *sandbox.SandboxConfig, c *sandbox.ContainerConfig) fake.Behavior {
		b := fake.Interpret(s, c)
		b.ExecResults = map[string]sandbox.ExecResult{"drain": {ExitCode: 1}}
		return b
	})
	e.start()
	pod := e.pod("web", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	e.create(pod)
	e.waitPod("web", "Running", running)
	deleted := e.watchDeletion("web")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "web", metav1.DeleteOptions{}))
	select {
	case <-deleted:
	case <-time.After(waitTimeout):
		t.Fatal("not deleted")
	}
	e.waitEvent("web", "Warning FailedPreStopHook PreStopHook failed")
}

func TestDeletionInterruptsAPull(t *testing.T) {
	e := newEnv(t)
	e.images.PullDelay = time.Hour // a registry that never answers
	require.NoError(t, e.images.AddRemote("registry.test/slow:1", v1.Config{}))
	e.start()
	pod := e.pod("slow", []string{"sleep", "inf"})
	pod.Spec.Containers[0].Image = "registry.test/slow:1"
	e.create(pod)
	e.waitEvent("slow", `Normal Pulling Pulling image "registry.test/slow:1"`)
	deleted := e.watchDeletion("slow")
	require.NoError(t, e.client.CoreV1().Pods("default").Delete(context.Background(), "slow", metav1.DeleteOptions{}))
	select {
	case <-deleted:
	case <-time.After(waitTimeout):
		t.Fatal("the deletion waited for the pull")
	}
}
