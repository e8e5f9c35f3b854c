package openapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// These tests drive the documents through the code kubectl runs: client-go's
// discovery client (protobuf v2, JSON v3 with hashed URLs), cli-runtime's
// fieldValidation verifiers, kube-openapi's v2 model parser and
// apimachinery's strategic merge patch.

type testClients struct {
	disco *discovery.DiscoveryClient
	dyn   dynamic.Interface
}

func newTestClients(t *testing.T, h *Handler) testClients {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return testClients{disco: disco, dyn: dyn}
}

var servedKinds = []schema.GroupVersionKind{
	gvk("", "v1", "Pod"), gvk("", "v1", "Node"), gvk("", "v1", "Namespace"), gvk("", "v1", "ConfigMap"),
	gvk("", "v1", "Service"), gvk("apps", "v1", "Deployment"), gvk("apps", "v1", "ReplicaSet"),
	gvk("coordination.k8s.io", "v1", "Lease"), gvk("batch", "v1", "Job"),
	gvk("discovery.k8s.io", "v1", "EndpointSlice"), gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
}

// kubectlModelIndex indexes v2 models by the x-kubernetes-group-version-kind
// extension the way kubectl's openapi.NewOpenAPIData does: a list of maps
// decoded by yaml.v2.
func kubectlModelIndex(models proto.Models) map[schema.GroupVersionKind]string {
	idx := map[schema.GroupVersionKind]string{}
	for _, name := range models.ListModels() {
		list, ok := models.LookupModel(name).GetExtensions()[extGVK].([]interface{})
		if !ok {
			continue
		}
		for _, e := range list {
			m, ok := e.(map[interface{}]interface{})
			if !ok {
				continue
			}
			g, _ := m["group"].(string)
			v, _ := m["version"].(string)
			k, _ := m["kind"].(string)
			if k != "" {
				idx[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = name
			}
		}
	}
	return idx
}

func TestV2ThroughDiscoveryClient(t *testing.T) {
	c := newTestClients(t, newTestHandler(t))
	doc, err := c.disco.OpenAPISchema() // protobuf, as kubectl fetches it
	require.NoError(t, err)
	models, err := proto.NewOpenAPIData(doc)
	require.NoError(t, err, "kubectl's v2 model parser accepts the document")
	idx := kubectlModelIndex(models)
	for _, k := range append(servedKinds, gvk("", "v1", "PodList"), gvk("apps", "v1", "DeploymentList"),
		gvk("autoscaling", "v1", "Scale"), gvk("", "v1", "Binding")) {
		assert.Contains(t, idx, k, "definition for %v", k)
	}
	assert.Equal(t, "io.k8s.api.core.v1.Pod", idx[gvk("", "v1", "Pod")])

	// kubectl apply's v2 path: patch meta from the Pod model.
	pod := models.LookupModel(idx[gvk("", "v1", "Pod")])
	meta := strategicpatch.NewPatchMetaFromOpenAPI(pod)
	spec, _, err := meta.LookupPatchMetadataForStruct("spec")
	require.NoError(t, err)
	_, pm, err := spec.LookupPatchMetadataForSlice("containers")
	require.NoError(t, err)
	assert.Equal(t, "name", pm.GetPatchMergeKey())
	assert.Equal(t, []string{"merge"}, pm.GetPatchStrategies())
}

func TestFieldValidationVerifiers(t *testing.T) {
	c := newTestClients(t, newTestHandler(t))
	v2 := resource.NewQueryParamVerifier(c.dyn, c.disco, resource.QueryParamFieldValidation)
	v3 := resource.NewQueryParamVerifierV3(c.dyn, cached.NewClient(c.disco.OpenAPIV3()), resource.QueryParamFieldValidation)
	// What kubectl create/apply/replace build in their Validator.
	fallback := resource.NewFallbackQueryParamVerifier(v3, v2)
	verifiers := map[string]resource.Verifier{"v2": v2, "v3": v3, "fallback": fallback}

	for name, v := range verifiers {
		for _, k := range servedKinds {
			assert.NoError(t, v.HasSupport(k), "%s verifier, %v", name, k)
		}
		err := v.HasSupport(schema.GroupVersionKind{Version: "v1", Kind: "List"})
		assert.True(t, resource.IsParamUnsupportedError(err), "%s: v1 List is never supported: %v", name, err)
	}
	// A group version the server does not have, and no CRD for it.
	err := v3.HasSupport(gvk("example.com", "v1", "Widget"))
	assert.True(t, resource.IsParamUnsupportedError(err), "unknown group version: %v", err)

	// An unknown query parameter is unsupported everywhere: the check is real.
	other := resource.NewQueryParamVerifierV3(c.dyn, c.disco.OpenAPIV3(), "noSuchParam")
	err = other.HasSupport(gvk("", "v1", "Pod"))
	assert.True(t, resource.IsParamUnsupportedError(err), "%v", err)
}

// kubectlV3PatchMeta finds the component schema of gvk as kubectl apply does
// (x-kubernetes-group-version-kind lists) and checks the PATCH operation
// accepts strategic merge patch.
func kubectlV3PatchMeta(t *testing.T, root openapi3.Root, k schema.GroupVersionKind) strategicpatch.LookupPatchMeta {
	t.Helper()
	doc, err := root.GVSpec(k.GroupVersion())
	require.NoError(t, err)
	smp := false
	for _, p := range doc.Paths.Paths {
		if p.Patch == nil || !extensionIsGVK(t, p.Patch.Extensions, k) {
			continue
		}
		require.NotNil(t, p.Patch.RequestBody)
		_, smp = p.Patch.RequestBody.Content["application/strategic-merge-patch+json"]
		var found bool
		for _, prm := range p.Patch.Parameters {
			found = found || (prm.Name == "fieldValidation" && prm.In == "query")
		}
		assert.True(t, found, "patch operation for %v has fieldValidation", k)
	}
	require.True(t, smp, "PATCH for %v accepts strategic merge patch", k)
	for _, s := range doc.Components.Schemas {
		var list []map[string]string
		if s.Extensions.GetObject(extGVK, &list) != nil {
			continue
		}
		for _, e := range list {
			if e["group"] == k.Group && e["version"] == k.Version && e["kind"] == k.Kind {
				return strategicpatch.PatchMetaFromOpenAPIV3{Schema: s, SchemaList: doc.Components.Schemas}
			}
		}
	}
	t.Fatalf("no component schema for %v", k)
	return nil
}

func extensionIsGVK(t *testing.T, ext spec.Extensions, k schema.GroupVersionKind) bool {
	var m map[string]string
	if ext.GetObject(extGVK, &m) != nil {
		return false
	}
	return m["group"] == k.Group && m["version"] == k.Version && m["kind"] == k.Kind
}

func TestV3PatchMetaMatchesGoStructs(t *testing.T) {
	c := newTestClients(t, newTestHandler(t))
	root := openapi3.NewRoot(cached.NewClient(c.disco.OpenAPIV3()))

	podMeta := kubectlV3PatchMeta(t, root, gvk("", "v1", "Pod"))
	spec, _, err := podMeta.LookupPatchMetadataForStruct("spec")
	require.NoError(t, err)
	containers, pm, err := spec.LookupPatchMetadataForSlice("containers")
	require.NoError(t, err)
	assert.Equal(t, "name", pm.GetPatchMergeKey())
	assert.Equal(t, []string{"merge"}, pm.GetPatchStrategies())
	_, pm, err = containers.LookupPatchMetadataForSlice("ports")
	require.NoError(t, err)
	assert.Equal(t, "containerPort", pm.GetPatchMergeKey())
	_, pm, err = spec.LookupPatchMetadataForSlice("volumes")
	require.NoError(t, err)
	assert.Equal(t, []string{"merge", "retainKeys"}, pm.GetPatchStrategies())

	for _, tc := range []struct {
		name                        string
		kind                        schema.GroupVersionKind
		obj                         runtime.Object
		original, modified, current string
	}{
		{"pod: container and env merged by name", gvk("", "v1", "Pod"), &corev1.Pod{},
			podYAML("nginx:1.25", "A", "1", ""), podYAML("nginx:1.26", "B", "2", ""),
			podYAML("nginx:1.25", "A", "1", "sidecar")},
		{"deployment: template containers and strategy", gvk("apps", "v1", "Deployment"), &appsv1.Deployment{},
			deployYAML(2, "nginx:1.25", "RollingUpdate"), deployYAML(3, "nginx:1.26", "Recreate"),
			deployYAML(2, "nginx:1.25", "RollingUpdate")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			original, modified, current := toJSON(t, tc.original), toJSON(t, tc.modified), toJSON(t, tc.current)
			structMeta, err := strategicpatch.NewPatchMetaFromStruct(tc.obj)
			require.NoError(t, err)
			want, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, structMeta, false)
			require.NoError(t, err)
			got, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current,
				kubectlV3PatchMeta(t, root, tc.kind), false)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got))
			assert.Contains(t, string(got), "$setElementOrder", "a list merged by key, not replaced")
		})
	}
}

func toJSON(t *testing.T, y string) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	require.NoError(t, err)
	return j
}

func podYAML(image, envName, envValue, sidecar string) string {
	y := `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  containers:
  - name: web
    image: ` + image + `
    ports: [{containerPort: 80, protocol: TCP}]
    env: [{name: ` + envName + `, value: "` + envValue + `"}]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
`
	if sidecar != "" {
		y += "  - {name: " + sidecar + ", image: busybox}\n"
	}
	return y + "  volumes: [{name: data, emptyDir: {}}]\n"
}

func deployYAML(replicas int, image, strategy string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: ` + itoa(replicas) + `
  selector: {matchLabels: {app: web}}
  strategy: {type: ` + strategy + `}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: ` + image + `
        ports: [{containerPort: 8080, name: http}]
`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestV3DocumentsParse(t *testing.T) {
	h := newTestHandler(t)
	for _, name := range h.V3().Names() {
		d, _ := h.V3().Document(name)
		var doc spec3.OpenAPI
		require.NoError(t, json.Unmarshal(d.JSON(), &doc), name)
		assert.Equal(t, "3.0.0", doc.Version)
		assert.NotEmpty(t, doc.Paths.Paths, name)
	}
}
