package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller/controllers"
)

// TestControllersOnRealNodes drives the controller manager with the real
// kubectl on a two-node cluster running real containers (issue 9): a
// Deployment from `kubectl create deploy` through scaling, a rolling update
// and its undo; ReplicaSet self-healing; cascading deletion in all three
// modes; Jobs that complete and that fail; namespace deletion; and,
// last, the loss of a node, whose pods come back on the other one.
func TestControllersOnRealNodes(t *testing.T) {
	nc := startNodeCluster(t, nodeClusterConfig{Controllers: controllers.Options{
		NodeMonitorGracePeriod: 4 * time.Second, // Kubernetes: 40 s
		JobBackoff:             time.Second,     // Kubernetes: 10 s
	}})
	t.Run("Deployment", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		k.OK("create", "deploy", "web", "--image="+nc.image, "--replicas=3", "--port=8080")
		ps := nc.waitPods("default", "app=web", 3)
		assert.Len(t, nodesOf(ps), 2, "the 3 pods are spread over both nodes: %+v", ps)
		nc.waitDeploy("default", "web", 3)
		assert.Regexp(t, `web\s+3/3\s+3\s+3`, k.OK("get", "deploy", "web"))

		k.OK("scale", "deploy", "web", "--replicas=5")
		nc.waitPods("default", "app=web", 5)
		nc.waitDeploy("default", "web", 5)
		k.OK("scale", "deploy", "web", "--replicas=2")
		nc.waitPods("default", "app=web", 2)
		nc.waitDeploy("default", "web", 2)

		// A rolling update of 4 replicas (maxUnavailable 25% → 1, maxSurge
		// 25% → 1): never fewer than 3 available.
		k.OK("scale", "deploy", "web", "--replicas=4")
		nc.waitDeploy("default", "web", 4)
		minAvailable := nc.watchMinAvailable("web")
		k.OK("set", "image", "deploy/web", "web="+nc.image2)
		out := nc.long("rollout", "status", "deploy/web", "--timeout=3m")
		assert.Contains(t, out, `deployment "web" successfully rolled out`)
		status, ready := minAvailable()
		assert.GreaterOrEqual(t, ready, 3, "Ready pods during the rollout")
		assert.GreaterOrEqual(t, status, 3, "status.availableReplicas during the rollout")
		nc.waitPods("default", "app=web", 4)
		assert.Equal(t, nc.image2, strings.TrimSpace(k.OK("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")))
		assert.Equal(t, "2", strings.TrimSpace(k.OK("get", "deploy", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`)))
		rs := strings.Fields(k.OK("get", "rs", "-l", "app=web", "-o", "jsonpath={range .items[*]}{.metadata.name}={.spec.replicas} {end}"))
		assert.Len(t, rs, 2, "old and new ReplicaSet kept: %v", rs)
		assert.Contains(t, k.OK("rollout", "history", "deploy/web"), "2 ")

		minAvailable = nc.watchMinAvailable("web")
		k.OK("rollout", "undo", "deploy/web")
		nc.long("rollout", "status", "deploy/web", "--timeout=3m")
		status, ready = minAvailable()
		assert.GreaterOrEqual(t, ready, 3, "Ready pods during the undo")
		assert.GreaterOrEqual(t, status, 3, "status.availableReplicas during the undo")
		assert.Equal(t, nc.image, strings.TrimSpace(k.OK("get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}")))
		assert.Equal(t, "3", strings.TrimSpace(k.OK("get", "deploy", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`)))
		nc.waitDeploy("default", "web", 4)
	})

	t.Run("ReplicaSetReplacesDeletedPod", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		before := nc.waitPods("default", "app=web", 4)
		victim := before[0].Name
		k.OK("delete", "pod", victim, "--wait=false")
		require.Eventually(t, func() bool {
			ps := nc.runningReady("default", "app=web")
			if len(ps) != 4 {
				return false
			}
			for _, p := range ps {
				if p.Name == victim {
					return false
				}
			}
			return true
		}, 3*time.Minute, 250*time.Millisecond, "pod %s replaced", victim)
	})

	t.Run("DeleteDeploymentBackground", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		k.OK("delete", "deploy", "web") // background is kubectl's default
		nc.gone("default", "rs", "app=web")
		nc.gone("default", "pods", "app=web")
	})

	t.Run("DeleteDeploymentForeground", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		k.OK("create", "deploy", "fg", "--image="+nc.image, "--replicas=2")
		nc.waitDeploy("default", "fg", 2)
		// With foreground deletion kubectl returns once the Deployment is
		// gone, which happens only after its dependents are.
		nc.long("delete", "deploy", "fg", "--cascade=foreground", "--timeout=3m")
		assert.Empty(t, strings.TrimSpace(k.OK("get", "rs", "-l", "app=fg", "-o", "name")), "ReplicaSets deleted before the owner")
		nc.gone("default", "pods", "app=fg")
	})

	t.Run("DeleteDeploymentOrphan", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		k.OK("create", "deploy", "orphan", "--image="+nc.image, "--replicas=2")
		nc.waitDeploy("default", "orphan", 2)
		pods := nc.waitPods("default", "app=orphan", 2)
		k.OK("delete", "deploy", "orphan", "--cascade=orphan")
		require.Eventually(t, func() bool { return k.Run("get", "deploy", "orphan").Code != 0 }, time.Minute, 200*time.Millisecond)
		time.Sleep(2 * time.Second) // give a wrong cascade time to show
		assert.Len(t, strings.Fields(k.OK("get", "rs", "-l", "app=orphan", "-o", "name")), 1, "the ReplicaSet stays")
		assert.Empty(t, strings.TrimSpace(k.OK("get", "rs", "-l", "app=orphan", "-o", "jsonpath={.items[*].metadata.ownerReferences}")), "and is released")
		t.Logf("after the orphaning delete:\n%s", k.OK("get", "rs,pods", "-l", "app=orphan", "-o", "wide", "--show-labels"))
		still := nc.waitPods("default", "app=orphan", 2)
		assert.ElementsMatch(t, names(pods), names(still), "the same pods keep running")
		k.OK("delete", "rs", "-l", "app=orphan")
		nc.gone("default", "pods", "app=orphan")
	})

	t.Run("JobCompletes", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		apply(t, k, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: done}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: %s
        args: ["init", "/tmp/result", "done"]
`, nc.image))
		nc.long("wait", "--for=condition=Complete", "job/done", "--timeout=3m")
		assert.Equal(t, "3", strings.TrimSpace(k.OK("get", "job", "done", "-o", "jsonpath={.status.succeeded}")))
		phases := strings.Fields(k.OK("get", "pods", "-l", "job-name=done", "-o", "jsonpath={.items[*].status.phase}"))
		assert.Equal(t, []string{"Succeeded", "Succeeded", "Succeeded"}, phases)
	})

	t.Run("JobFailsAtBackoffLimit", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		apply(t, k, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: broken}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - name: work
        image: %s
        args: ["init"]
`, nc.image)) // demo-web init without its arguments exits 1
		nc.long("wait", "--for=condition=Failed", "job/broken", "--timeout=3m")
		assert.Equal(t, "BackoffLimitExceeded", strings.TrimSpace(k.OK("get", "job", "broken", "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].reason}`)))
		assert.Equal(t, "2", strings.TrimSpace(k.OK("get", "job", "broken", "-o", "jsonpath={.status.failed}")), "backoffLimit 1: two failed pods")
		time.Sleep(2 * time.Second)
		assert.Len(t, strings.Fields(k.OK("get", "pods", "-l", "job-name=broken", "-o", "name")), 2, "no pod after the Failed condition")
	})

	t.Run("NamespaceDeletion", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		k.OK("create", "namespace", "team")
		k.OK("create", "deploy", "api", "-n", "team", "--image="+nc.image, "--replicas=2")
		k.OK("create", "configmap", "settings", "-n", "team", "--from-literal=a=b")
		nc.waitPods("team", "app=api", 2)
		nc.long("delete", "namespace", "team", "--timeout=3m")
		assert.NotEqual(t, 0, k.Run("get", "namespace", "team").Code, "namespace removed")
		for _, kind := range []string{"pods", "rs", "deploy", "configmaps"} {
			assert.Empty(t, strings.TrimSpace(k.OK("get", kind, "-n", "team", "-o", "name")), "%s left in the deleted namespace", kind)
		}
	})

	t.Run("NodeLoss", func(t *testing.T) {
		nc := nc.in(t)
		k := nc.k
		// Tolerations shortened from the 300 s admission default.
		apply(t, k, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: survivor}
spec:
  replicas: 4
  selector: {matchLabels: {app: survivor}}
  template:
    metadata: {labels: {app: survivor}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 3}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 3}
      containers:
      - name: web
        image: %s
`, nc.image))
		ps := nc.waitPods("default", "app=survivor", 4)
		onNode2 := nodesOf(ps)[nc.node2]
		require.NotZero(t, onNode2, "some pods run on %s: %+v", nc.node2, ps)

		nc.stopNode2()
		require.Eventually(t, func() bool {
			return strings.TrimSpace(k.OK("get", "node", nc.node2, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)) == "Unknown"
		}, 2*time.Minute, 250*time.Millisecond, "node %s Ready=Unknown after its lease stops", nc.node2)
		assert.Contains(t, k.OK("get", "node", nc.node2, "-o", "jsonpath={.spec.taints}"), "node.kubernetes.io/unreachable")
		require.Eventually(t, func() bool {
			ps := nc.runningReady("default", "app=survivor")
			return len(ps) == 4 && nodesOf(ps)[nc.node1] == 4
		}, 3*time.Minute, 250*time.Millisecond, "the pods of the lost node are replaced on %s", nc.node1)
		nc.waitDeploy("default", "survivor", 4)
	})
}

// watchMinAvailable polls, in the background until the returned function
// is called, the Deployment's status.availableReplicas and the number of
// its pods that are Ready and not being deleted; it reports the lowest of
// each seen.
func (nc *nodeCluster) watchMinAvailable(name string) func() (status, ready int) {
	stop := make(chan struct{})
	lowStatus, lowReady := 1<<30, 1<<30
	done := make(chan struct{})
	cl := nc.c.Client()
	go func() {
		defer close(done)
		for {
			if d, err := cl.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil {
				lowStatus = min(lowStatus, int(d.Status.AvailableReplicas))
			}
			if l, err := cl.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name}); err == nil {
				n := 0
				for _, p := range l.Items {
					for _, c := range p.Status.Conditions {
						if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
							n++
						}
					}
				}
				lowReady = min(lowReady, n)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() (int, int) {
		close(stop)
		<-done
		return lowStatus, lowReady
	}
}

func names(ps []podInfo) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// apply writes manifest to a file and kubectl-applies it.
func apply(t *testing.T, k *kubectl, manifest string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "manifest.yaml")
	require.NoError(t, os.WriteFile(p, []byte(manifest), 0o644))
	k.OK("apply", "-f", p)
}
