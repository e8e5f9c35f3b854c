package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestKubectlGet: the table columns kubectl users know, -o wide, -o yaml
// and -o json of a freshly created (Pending, unscheduled) pod, selectors.
func TestKubectlGet(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		created := createPod(t, srv.Client(), "nginx")

		out := k.OK("get", "pods")
		assert.Equal(t, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, fields(header(out)))
		row := tableRow(t, out, "nginx")
		require.Len(t, row, 5, "row %q", row)
		assert.Equal(t, []string{"nginx", "0/1", "Pending", "0"}, row[:4])

		out = k.OK("get", "po", "nginx", "-o", "wide")
		assert.Equal(t, []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"}, fields(header(out)))
		row = tableRow(t, out, "nginx")
		require.Len(t, row, 9, "row %q", row)
		assert.Equal(t, []string{"nginx", "0/1", "Pending", "0"}, row[:4])
		assert.Equal(t, []string{"<none>", "<none>", "<none>", "<none>"}, row[5:], "IP NODE NOMINATED-NODE READINESS-GATES")

		out = k.OK("get", "pod", "nginx", "-o", "yaml")
		assert.True(t, strings.HasPrefix(out, "apiVersion: v1\nkind: Pod\n"), "yaml:\n%s", out)
		var fromYAML corev1.Pod
		require.NoError(t, yaml.Unmarshal([]byte(out), &fromYAML))
		assert.Equal(t, "nginx", fromYAML.Name)
		assert.Equal(t, created.UID, fromYAML.UID)
		assert.Equal(t, "nginx:1.27", fromYAML.Spec.Containers[0].Image)
		assert.Equal(t, corev1.PodPending, fromYAML.Status.Phase)

		out = k.OK("get", "pod", "nginx", "-o", "json")
		var pod corev1.Pod
		require.NoError(t, json.Unmarshal([]byte(out), &pod), "json:\n%s", out)
		assert.Equal(t, "Pod", pod.Kind)
		assert.Equal(t, "v1", pod.APIVersion)
		assert.Equal(t, "default", pod.Namespace)
		assert.Equal(t, corev1.PodPending, pod.Status.Phase)
		assert.Empty(t, pod.Spec.NodeName)
		assert.Equal(t, created.UID, pod.UID)
		assert.NotEmpty(t, pod.UID)
		assert.NotEmpty(t, pod.ResourceVersion)
		assert.Equal(t, created.ResourceVersion, pod.ResourceVersion)
		assert.False(t, pod.CreationTimestamp.IsZero())
		assert.WithinDuration(t, time.Now(), pod.CreationTimestamp.Time, 5*time.Minute)
		assert.Equal(t, corev1.PodQOSBurstable, pod.Status.QOSClass)
		// Defaults the API server applies to every pod.
		assert.Equal(t, corev1.RestartPolicyAlways, pod.Spec.RestartPolicy)
		assert.Equal(t, corev1.DNSClusterFirst, pod.Spec.DNSPolicy)
		assert.Equal(t, corev1.DefaultSchedulerName, pod.Spec.SchedulerName)
		if assert.NotNil(t, pod.Spec.TerminationGracePeriodSeconds) {
			assert.EqualValues(t, 30, *pod.Spec.TerminationGracePeriodSeconds)
		}
		assert.Equal(t, corev1.PullIfNotPresent, pod.Spec.Containers[0].ImagePullPolicy)
		assert.Equal(t, "/dev/termination-log", pod.Spec.Containers[0].TerminationMessagePath)

		assert.Equal(t, "pod/nginx\n", k.OK("get", "pods", "-o", "name"))
		assert.Equal(t, "Pending nginx:1.27", k.OK("get", "pod", "nginx", "-o", "jsonpath={.status.phase} {.spec.containers[0].image}"))
		assert.Equal(t, "pod/nginx\n", k.OK("get", "pods", "-l", "app=nginx,tier in (web)", "-o", "name"))
		assert.Equal(t, "pod/nginx\n", k.OK("get", "pods", "--field-selector", "status.phase=Pending,spec.nodeName=", "-o", "name"))
		r := k.Run("get", "pods", "-l", "app=other")
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Empty(t, r.Stdout)
		assert.Equal(t, "No resources found in default namespace.\n", r.Stderr)

		out = k.OK("get", "pods", "-o", "custom-columns=NAME:.metadata.name,PORT:.spec.containers[0].ports[0].containerPort")
		assert.Equal(t, [][]string{{"NAME", "PORT"}, {"nginx", "80"}}, tableCells(out))
	})
}

// TestKubectlNamespacesAndGetAll: create ns, get ns (the built-in
// namespaces exist and are Active) and get all.
func TestKubectlNamespacesAndGetAll(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		assert.Equal(t, "namespace/x created\n", k.OK("create", "ns", "x"))
		out := k.OK("get", "ns")
		assert.Equal(t, []string{"NAME", "STATUS", "AGE"}, fields(header(out)))
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "x"} {
			assert.Equal(t, "Active", tableRow(t, out, ns)[1], "namespace %s", ns)
		}
		r := k.Run("get", "pods", "-n", "x")
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Equal(t, "No resources found in x namespace.\n", r.Stderr)

		createPod(t, srv.Client(), "nginx")
		assert.Equal(t, "deployment.apps/web created\n", k.OK("create", "deploy", "web", "--image=img:1", "--replicas=3"))
		out = k.OK("get", "all")
		row := tableRow(t, out, "pod/nginx")
		assert.Equal(t, []string{"pod/nginx", "0/1", "Pending", "0"}, row[:4])
		row = tableRow(t, out, "deployment.apps/web")
		assert.Equal(t, []string{"deployment.apps/web", "0/3", "0", "0"}, row[:4])
	})
}

// tableCells splits table output into rows of cells.
func tableCells(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, fields(line))
	}
	return rows
}
