package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubectlDiscovery: api-resources, api-versions, version.
func TestKubectlDiscovery(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		out := k.OK("api-resources")
		assert.Equal(t, []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"}, fields(header(out)))
		for _, want := range [][]string{
			{"pods", "po", "v1", "true", "Pod"},
			{"services", "svc", "v1", "true", "Service"},
			{"configmaps", "cm", "v1", "true", "ConfigMap"},
			{"namespaces", "ns", "v1", "false", "Namespace"},
			{"nodes", "no", "v1", "false", "Node"},
			{"deployments", "deploy", "apps/v1", "true", "Deployment"},
			{"replicasets", "rs", "apps/v1", "true", "ReplicaSet"},
		} {
			assert.Contains(t, tableCells(out), want, "api-resources:\n%s", out)
		}

		versions := strings.Split(strings.TrimSpace(k.OK("api-versions")), "\n")
		for _, want := range []string{"v1", "apps/v1", "batch/v1", "coordination.k8s.io/v1", "events.k8s.io/v1", "rbac.authorization.k8s.io/v1"} {
			assert.Contains(t, versions, want)
		}

		names := strings.Split(strings.TrimSpace(k.OK("api-resources", "--verbs=list", "-o", "name")), "\n")
		for _, want := range []string{"pods", "services", "namespaces", "events", "deployments.apps", "replicasets.apps", "leases.coordination.k8s.io"} {
			assert.Contains(t, names, want)
		}
		assert.NotContains(t, names, "bindings", "bindings can only be created")

		out = k.OK("api-resources", "--namespaced=false", "-o", "name")
		assert.Contains(t, strings.Split(strings.TrimSpace(out), "\n"), "namespaces")
		assert.NotContains(t, strings.Split(strings.TrimSpace(out), "\n"), "pods")

		var v struct {
			ServerVersion struct{ Major, Minor, GitVersion string } `json:"serverVersion"`
		}
		out = k.OK("version", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(out), &v), "version:\n%s", out)
		assert.Equal(t, "1", v.ServerVersion.Major)
		assert.NotEmpty(t, v.ServerVersion.GitVersion)
	})
}

// TestKubectlExplain: kubectl explain reads the server's OpenAPI documents.
func TestKubectlExplain(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		out := k.OK("explain", "pod.spec.containers")
		assert.Contains(t, out, "KIND:")
		assert.Contains(t, out, "Pod")
		assert.Regexp(t, `(?m)^\s+image\s`, out, "explain:\n%s", out)
	})
}
