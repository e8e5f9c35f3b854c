package deployment_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller/deployment"
	"github.com/podkit/podkit/internal/testutil"
)

// kubectl runs the real kubectl against the test's API server.
type kubectl struct {
	t          *testing.T
	bin, kconf string
	home       string
}

func (k kubectl) run(args ...string) (string, error) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + k.home, "KUBECONFIG=" + k.kconf, "NO_PROXY=127.0.0.1"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (k kubectl) ok(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	require.NoError(k.t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// TestKubectlRollout drives the controllers with the real kubectl: create
// deploy, scale, set image with rollout status, rollout history and undo.
func TestKubectlRollout(t *testing.T) {
	bin := testutil.Kubectl(t, 32)
	e := newEnv(t)
	k := kubectl{t: t, bin: bin, kconf: e.Kubeconfig(t), home: t.TempDir()}

	assert.Equal(t, "deployment.apps/web created\n", k.ok("create", "deploy", "web", "--image=img:1", "--replicas=3"))
	assert.Equal(t, "deployment \"web\" successfully rolled out\n", lastLine(k.ok("rollout", "status", "deploy/web", "--timeout=60s")))
	row := strings.Fields(lastLine(k.ok("get", "deploy", "web")))
	assert.Equal(t, []string{"web", "3/3", "3", "3"}, row[:4])

	for _, n := range []string{"5", "2"} {
		assert.Equal(t, "deployment.apps/web scaled\n", k.ok("scale", "deploy", "web", "--replicas="+n))
		k.ok("rollout", "status", "deploy/web", "--timeout=60s")
		waitFor(t, "ready "+n+"/"+n, func(context.Context) (bool, error) {
			row := strings.Fields(lastLine(k.ok("get", "deploy", "web")))
			return row[1] == n+"/"+n && row[3] == n, nil
		})
	}

	tr := startTracker(t, e.Client, "web", nil)
	tr.waitReady(t, 2)
	assert.Equal(t, "deployment.apps/web image updated\n", k.ok("set", "image", "deploy/web", "img=img:2"))
	// Annotated after the change, the cause lands on the new revision only
	// (before it, Kubernetes copies it to the current ReplicaSet too).
	k.ok("annotate", "deploy/web", deployment.ChangeCauseAnnotation+"=set image img:2")
	assert.Equal(t, "deployment \"web\" successfully rolled out\n", lastLine(k.ok("rollout", "status", "deploy/web", "--timeout=60s")))
	minAvail, maxSpec, _ := tr.results()
	// kubectl create deploy leaves the API defaults: 25% surge (1 of 2),
	// 25% unavailable (0 of 2).
	assert.GreaterOrEqual(t, minAvail, 2)
	assert.LessOrEqual(t, maxSpec, int32(3))
	for _, p := range livePods(t, e.Client, "web") {
		assert.Equal(t, "img:2", p.Spec.Containers[0].Image)
	}

	var history string
	waitFor(t, "the change-cause on revision 2", func(context.Context) (bool, error) {
		history = k.ok("rollout", "history", "deploy/web")
		return strings.Contains(history, "set image img:2"), nil
	})
	lines := strings.Split(strings.TrimSpace(history), "\n")
	require.GreaterOrEqual(t, len(lines), 4, history)
	assert.Equal(t, []string{"REVISION", "CHANGE-CAUSE"}, strings.Fields(lines[1]))
	assert.Equal(t, []string{"1", "<none>"}, strings.Fields(lines[2]))
	assert.Equal(t, "2 set image img:2", strings.Join(strings.Fields(lines[3]), " "))

	assert.Equal(t, "deployment.apps/web rolled back\n", k.ok("rollout", "undo", "deploy/web"))
	assert.Equal(t, "deployment \"web\" successfully rolled out\n", lastLine(k.ok("rollout", "status", "deploy/web", "--timeout=60s")))
	d := waitComplete(t, e.Client, "web")
	assert.Equal(t, "img:1", d.Spec.Template.Spec.Containers[0].Image)
	waitFor(t, "revision 3", func(ctx context.Context) (bool, error) {
		d, err := e.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Annotations[deployment.RevisionAnnotation] == "3", err
	})
	for _, p := range livePods(t, e.Client, "web") {
		assert.Equal(t, "img:1", p.Spec.Containers[0].Image)
	}
	history = k.ok("rollout", "history", "deploy/web")
	assert.Contains(t, history, "\n2         set image img:2")
	assert.Contains(t, history, "\n3         <none>")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}
