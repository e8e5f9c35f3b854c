package openapi

import (
	"encoding/json"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/kubernetes/scheme"
)

type jsonObj = map[string]interface{}

func decode(t *testing.T, b []byte) jsonObj {
	t.Helper()
	var m jsonObj
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestOperations(t *testing.T) {
	h := newTestHandler(t)
	paths := decode(t, h.V2().JSON())["paths"].(jsonObj)
	type want struct {
		id, action string
		gvk        jsonObj
	}
	pod := jsonObj{"group": "", "version": "v1", "kind": "Pod"}
	deploy := jsonObj{"group": "apps", "version": "v1", "kind": "Deployment"}
	for _, tc := range []struct {
		path, method string
		want         want
	}{
		{"/api/v1/namespaces/{namespace}/pods/{name}", "get", want{"readCoreV1NamespacedPod", "get", pod}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "patch", want{"patchCoreV1NamespacedPod", "patch", pod}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "put", want{"replaceCoreV1NamespacedPod", "put", pod}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "delete", want{"deleteCoreV1NamespacedPod", "delete", pod}},
		{"/api/v1/namespaces/{namespace}/pods", "get", want{"listCoreV1NamespacedPod", "list", pod}},
		{"/api/v1/namespaces/{namespace}/pods", "post", want{"createCoreV1NamespacedPod", "post", pod}},
		{"/api/v1/namespaces/{namespace}/pods", "delete", want{"deletecollectionCoreV1NamespacedPod", "deletecollection", pod}},
		{"/api/v1/pods", "get", want{"listCoreV1PodForAllNamespaces", "list", pod}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", want{"patchCoreV1NamespacedPodStatus", "patch", pod}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/binding", "post",
			want{"createCoreV1NamespacedPodBinding", "post", jsonObj{"group": "", "version": "v1", "kind": "Binding"}}},
		{"/api/v1/namespaces/{namespace}/bindings", "post",
			want{"createCoreV1NamespacedBinding", "post", jsonObj{"group": "", "version": "v1", "kind": "Binding"}}},
		{"/api/v1/nodes/{name}", "get", want{"readCoreV1Node", "get", jsonObj{"group": "", "version": "v1", "kind": "Node"}}},
		{"/api/v1/nodes/{name}/status", "put", want{"replaceCoreV1NodeStatus", "put", jsonObj{"group": "", "version": "v1", "kind": "Node"}}},
		{"/api/v1/namespaces/{name}/finalize", "put",
			want{"replaceCoreV1NamespaceFinalize", "put", jsonObj{"group": "", "version": "v1", "kind": "Namespace"}}},
		{"/apis/apps/v1/namespaces/{namespace}/deployments", "get", want{"listAppsV1NamespacedDeployment", "list", deploy}},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "patch",
			want{"patchAppsV1NamespacedDeploymentScale", "patch", jsonObj{"group": "autoscaling", "version": "v1", "kind": "Scale"}}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", "get",
			want{"listRbacAuthorizationV1ClusterRole", "list", jsonObj{"group": "rbac.authorization.k8s.io", "version": "v1", "kind": "ClusterRole"}}},
		{"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "patch",
			want{"patchCoordinationV1NamespacedLease", "patch", jsonObj{"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}}},
		{"/apis/apps/v1/", "get", want{"getAppsV1APIResources", "", nil}},
		{"/apis/apps/", "get", want{"getAppsAPIGroup", "", nil}},
		{"/apis/", "get", want{"getAPIVersions", "", nil}},
		{"/api/", "get", want{"getCoreAPIVersions", "", nil}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			item, ok := paths[tc.path].(jsonObj)
			require.True(t, ok, "path missing")
			op, ok := item[tc.method].(jsonObj)
			require.True(t, ok, "operation missing")
			assert.Equal(t, tc.want.id, op["operationId"])
			if tc.want.action == "" {
				assert.NotContains(t, op, extAction)
				assert.NotContains(t, op, extGVK)
				return
			}
			assert.Equal(t, tc.want.action, op[extAction])
			assert.Equal(t, tc.want.gvk, op[extGVK])
		})
	}

	for _, absent := range []string{"/api/v1/namespaces/{namespace}/bindings/{name}", "/api/v1/nodes/{name}/binding"} {
		assert.NotContains(t, paths, absent)
	}
	ns := paths["/api/v1/namespaces"].(jsonObj)
	assert.NotContains(t, ns, "delete", "namespaces have no deletecollection verb")

	patch := paths["/api/v1/namespaces/{namespace}/pods/{name}"].(jsonObj)["patch"].(jsonObj)
	assert.Equal(t, []interface{}{"application/json-patch+json", "application/merge-patch+json",
		"application/strategic-merge-patch+json", "application/apply-patch+yaml"}, patch["consumes"])
	var names []string
	for _, p := range patch["parameters"].([]interface{}) {
		names = append(names, p.(jsonObj)["name"].(string))
	}
	assert.Equal(t, []string{"body", "dryRun", "fieldManager", "fieldValidation", "force"}, names)

	list := paths["/api/v1/namespaces/{namespace}/pods"].(jsonObj)["get"].(jsonObj)
	names = nil
	for _, p := range list["parameters"].([]interface{}) {
		names = append(names, p.(jsonObj)["name"].(string))
	}
	assert.Equal(t, []string{"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}, names)
	assert.Contains(t, list["produces"], "application/json;stream=watch")

	podDelete := paths["/api/v1/namespaces/{namespace}/pods/{name}"].(jsonObj)["delete"].(jsonObj)
	assert.Equal(t, "#/definitions/io.k8s.api.core.v1.Pod",
		podDelete["responses"].(jsonObj)["200"].(jsonObj)["schema"].(jsonObj)["$ref"], "pods answer DELETE with the pod")
	cmDelete := paths["/api/v1/namespaces/{namespace}/configmaps/{name}"].(jsonObj)["delete"].(jsonObj)
	assert.Equal(t, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status",
		cmDelete["responses"].(jsonObj)["200"].(jsonObj)["schema"].(jsonObj)["$ref"])
}

// refs collects every "$ref" value in a decoded JSON document.
func refs(v interface{}, out map[string]bool) {
	switch x := v.(type) {
	case jsonObj:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out[s] = true
			}
			refs(e, out)
		}
	case []interface{}:
		for _, e := range x {
			refs(e, out)
		}
	}
}

func TestReferencesResolve(t *testing.T) {
	h := newTestHandler(t)
	check := func(name string, doc jsonObj, prefix string, defs jsonObj) {
		found := map[string]bool{}
		refs(doc, found)
		require.NotEmpty(t, found, name)
		for r := range found {
			require.True(t, strings.HasPrefix(r, prefix), "%s: %s", name, r)
			assert.Contains(t, defs, strings.TrimPrefix(r, prefix), "%s: dangling %s", name, r)
		}
		// Pruned: nothing unreferenced is shipped.
		for d := range defs {
			assert.True(t, found[prefix+d], "%s: %s is never referenced", name, d)
		}
	}
	v2 := decode(t, h.V2().JSON())
	check("v2", v2, "#/definitions/", v2["definitions"].(jsonObj))
	for _, name := range h.V3().Names() {
		d, _ := h.V3().Document(name)
		doc := decode(t, d.JSON())
		check(name, doc, "#/components/schemas/", doc["components"].(jsonObj)["schemas"].(jsonObj))
	}
	core, _ := h.V3().Document("api/v1")
	schemas := decode(t, core.JSON())["components"].(jsonObj)["schemas"].(jsonObj)
	assert.NotContains(t, schemas, "io.k8s.api.apps.v1.Deployment", "api/v1 holds only what its paths use")
}

func TestProtobufRoundTrip(t *testing.T) {
	h := newTestHandler(t)
	want, err := openapiv2.ParseDocument(h.V2().JSON())
	require.NoError(t, err)
	b, err := h.V2().Protobuf()
	require.NoError(t, err)
	var got openapiv2.Document
	require.NoError(t, proto.Unmarshal(b, &got))
	assert.True(t, proto.Equal(want, &got), "v2 protobuf decodes to the parsed JSON")

	for _, name := range h.V3().Names() {
		d, _ := h.V3().Document(name)
		want, err := openapiv3.ParseDocument(d.JSON())
		require.NoError(t, err, name)
		b, err := d.Protobuf()
		require.NoError(t, err, name)
		var got openapiv3.Document
		require.NoError(t, proto.Unmarshal(b, &got))
		assert.True(t, proto.Equal(want, &got), name)
	}
	_, err = h.V3().Discovery().Protobuf()
	assert.Error(t, err, "the discovery document is JSON only")
}

func TestDeterministic(t *testing.T) {
	a, b := newTestHandler(t), newTestHandler(t)
	assert.Equal(t, a.V2().ETag(), b.V2().ETag())
	assert.Equal(t, a.V3().Discovery().JSON(), b.V3().Discovery().JSON(), "hashes survive restarts")
}

func TestWithScheme(t *testing.T) {
	h := newTestHandler(t, WithScheme(scheme.Scheme))
	defs := decode(t, h.V2().JSON())["definitions"].(jsonObj)
	status := defs["io.k8s.apimachinery.pkg.apis.meta.v1.Status"].(jsonObj)
	assert.Contains(t, status[extGVK], jsonObj{"group": "", "version": "v1", "kind": "Status"})
	del := defs["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"].(jsonObj)[extGVK].([]interface{})
	assert.Greater(t, len(del), 5, "DeleteOptions is registered in every group")
	assert.Contains(t, del, jsonObj{"group": "apps", "version": "v1", "kind": "DeleteOptions"})
	pod := defs["io.k8s.api.core.v1.Pod"].(jsonObj)[extGVK]
	assert.Equal(t, []interface{}{jsonObj{"group": "", "version": "v1", "kind": "Pod"}}, pod)
}

func TestWithoutDiscoveryPaths(t *testing.T) {
	h := newTestHandler(t, WithoutDiscoveryPaths())
	paths := decode(t, h.V2().JSON())["paths"].(jsonObj)
	assert.NotContains(t, paths, "/api/")
	assert.NotContains(t, paths, "/apis/apps/v1/")
	assert.Equal(t, []string{"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/coordination.k8s.io/v1",
		"apis/discovery.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1"}, h.V3().Names())
}

func TestMergeSchemaOption(t *testing.T) {
	without := newTestHandler(t, WithMergeSchema(nil))
	defs := decode(t, without.V2().JSON())["definitions"].(jsonObj)
	containers := defs["io.k8s.api.core.v1.PodSpec"].(jsonObj)["properties"].(jsonObj)["containers"].(jsonObj)
	assert.NotContains(t, containers, extListType)
	assert.Equal(t, "name", containers[extPatchMergeKey], "patch tags come from struct tags regardless")

	with := newTestHandler(t)
	defs = decode(t, with.V2().JSON())["definitions"].(jsonObj)
	props := defs["io.k8s.api.core.v1.Container"].(jsonObj)["properties"].(jsonObj)
	assert.Equal(t, "map", props["ports"].(jsonObj)[extListType])
	assert.Equal(t, []interface{}{"containerPort", "protocol"}, props["ports"].(jsonObj)[extListMapKeys])
	conds := defs["io.k8s.api.core.v1.PodStatus"].(jsonObj)["properties"].(jsonObj)["conditions"].(jsonObj)
	assert.Equal(t, []interface{}{"type"}, conds[extListMapKeys])
}

func TestRequiredFields(t *testing.T) {
	h := newTestHandler(t)
	defs := decode(t, h.V2().JSON())["definitions"].(jsonObj)
	for def, want := range map[string][]interface{}{
		"io.k8s.api.core.v1.Container":          {"name"},
		"io.k8s.api.core.v1.PodSpec":            {"containers"},
		"io.k8s.api.core.v1.ContainerPort":      {"containerPort"},
		"io.k8s.api.apps.v1.DeploymentSpec":     {"selector", "template"},
		"io.k8s.api.coordination.v1.Lease":      nil,
		"io.k8s.api.discovery.v1.EndpointSlice": {"addressType"},
		"io.k8s.api.apps.v1.Deployment":         {"spec"},
		"io.k8s.api.rbac.v1.ClusterRole":        nil,
	} {
		got, _ := defs[def].(jsonObj)["required"].([]interface{})
		assert.Equal(t, want, got, def)
	}
}

func TestInfoDefaults(t *testing.T) {
	h, err := NewHandler(testResources()[:1], Info{})
	require.NoError(t, err)
	info := decode(t, h.V2().JSON())["info"].(jsonObj)
	assert.Equal(t, jsonObj{"title": "Kubernetes", "version": "unversioned"}, info)
	_, err = h.V2().Protobuf()
	require.NoError(t, err, "gnostic requires info.version")
	d, _ := h.V3().Document("api/v1")
	_, err = d.Protobuf()
	require.NoError(t, err)
}
