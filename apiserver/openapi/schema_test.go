package openapi

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type sampleInner struct {
	A string `json:"a"`
}

type sampleEmbedded struct {
	Promoted int32 `json:"promoted"`
}

type sample struct {
	metav1.TypeMeta `json:",inline"`
	sampleEmbedded
	Name      string                 `json:"name"`
	Count     int32                  `json:"count,omitempty"`
	Big       int64                  `json:"big,omitempty"`
	Plain     int                    `json:"plain,omitempty"`
	Ratio     float64                `json:"ratio,omitempty"`
	Flag      *bool                  `json:"flag,omitempty"`
	Data      []byte                 `json:"data,omitempty"`
	Tags      []string               `json:"tags,omitempty"`
	Labels    map[string]string      `json:"labels,omitempty"`
	Items     []sampleInner          `json:"items,omitempty" patchStrategy:"merge" patchMergeKey:"a"`
	Ptr       *sampleInner           `json:"ptr"`
	When      metav1.Time            `json:"when,omitempty"`
	Raw       time.Time              `json:"raw,omitempty"`
	Size      resource.Quantity      `json:"size,omitempty"`
	Port      intstr.IntOrString     `json:"port,omitempty"`
	ByName    map[string]sampleInner `json:"byName,omitempty"`
	Any       interface{}            `json:"any,omitempty"`
	Ext       runtime.RawExtension   `json:"ext,omitempty"`
	Skipped   string                 `json:"-"`
	NoTag     string
	unexposed string
}

type badMap struct {
	M map[int]string `json:"m"`
}

type recursive struct {
	Children []recursive `json:"children,omitempty"`
}

func TestDefinitionName(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeOf(corev1.Pod{}), "io.k8s.api.core.v1.Pod"},
		{reflect.TypeOf(metav1.ObjectMeta{}), "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
		{reflect.TypeOf(resource.Quantity{}), "io.k8s.apimachinery.pkg.api.resource.Quantity"},
		{reflect.TypeOf(runtime.RawExtension{}), "io.k8s.apimachinery.pkg.runtime.RawExtension"},
		{reflect.TypeOf(sample{}), "com.github.podkit.podkit.apiserver.openapi.sample"},
	} {
		assert.Equal(t, tc.want, definitionName(tc.typ), tc.typ.String())
	}
}

// schemaJSON renders t with the given flavor and returns all definitions as
// generic JSON.
func schemaJSON(t *testing.T, f flavor, typ reflect.Type) map[string]map[string]interface{} {
	t.Helper()
	g := newGenerator(f, &mergeInfo{}, map[reflect.Type][]schema.GroupVersionKind{
		typ: {{Group: "example.com", Version: "v1", Kind: "Sample"}},
	})
	_, err := g.define(typ)
	require.NoError(t, err)
	b, err := json.Marshal(g.defs)
	require.NoError(t, err)
	var out map[string]map[string]interface{}
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestSchemaOfStruct(t *testing.T) {
	const name = "com.github.podkit.podkit.apiserver.openapi.sample"
	defs := schemaJSON(t, flavorV2, reflect.TypeOf(sample{}))
	s := defs[name]
	props := s["properties"].(map[string]interface{})
	prop := func(n string) map[string]interface{} {
		p, ok := props[n].(map[string]interface{})
		require.True(t, ok, "property %s missing", n)
		return p
	}
	for _, tc := range []struct {
		field string
		want  map[string]interface{}
	}{
		{"apiVersion", map[string]interface{}{"type": "string"}},
		{"promoted", map[string]interface{}{"type": "integer", "format": "int32"}},
		{"count", map[string]interface{}{"type": "integer", "format": "int32"}},
		{"big", map[string]interface{}{"type": "integer", "format": "int64"}},
		{"plain", map[string]interface{}{"type": "integer", "format": "int32"}},
		{"ratio", map[string]interface{}{"type": "number", "format": "double"}},
		{"flag", map[string]interface{}{"type": "boolean"}},
		{"data", map[string]interface{}{"type": "string", "format": "byte"}},
		{"tags", map[string]interface{}{"type": "array", "items": map[string]interface{}{"type": "string"}}},
		{"labels", map[string]interface{}{"type": "object", "additionalProperties": map[string]interface{}{"type": "string"}}},
		{"items", map[string]interface{}{"type": "array",
			"items":                        map[string]interface{}{"$ref": "#/definitions/com.github.podkit.podkit.apiserver.openapi.sampleInner"},
			"x-kubernetes-patch-strategy":  "merge",
			"x-kubernetes-patch-merge-key": "a"}},
		{"ptr", map[string]interface{}{"$ref": "#/definitions/com.github.podkit.podkit.apiserver.openapi.sampleInner"}},
		{"when", map[string]interface{}{"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}},
		{"raw", map[string]interface{}{"type": "string", "format": "date-time"}},
		{"size", map[string]interface{}{"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}},
		{"port", map[string]interface{}{"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}},
		{"byName", map[string]interface{}{"type": "object", "additionalProperties": map[string]interface{}{
			"$ref": "#/definitions/com.github.podkit.podkit.apiserver.openapi.sampleInner"}}},
		{"any", map[string]interface{}{"type": "object"}},
		{"ext", map[string]interface{}{"$ref": "#/definitions/io.k8s.apimachinery.pkg.runtime.RawExtension"}},
		{"NoTag", map[string]interface{}{"type": "string"}},
	} {
		p := prop(tc.field)
		delete(p, "description")
		assert.Equal(t, tc.want, p, tc.field)
	}
	for _, absent := range []string{"Skipped", "-", "unexposed", "TypeMeta", "sampleEmbedded"} {
		assert.NotContains(t, props, absent)
	}
	assert.Equal(t, []interface{}{"promoted", "name", "ptr", "NoTag"}, s["required"], "required = no omitempty")
	assert.Equal(t, []interface{}{map[string]interface{}{"group": "example.com", "kind": "Sample", "version": "v1"}},
		s["x-kubernetes-group-version-kind"])

	assert.Equal(t, "string", defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["type"])
	assert.Equal(t, "date-time", defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"])
	assert.Equal(t, "string", defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"])
	assert.Equal(t, "int-or-string", defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"])
	assert.Equal(t, "string", defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"])
	assert.NotEmpty(t, defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["description"])
	assert.Equal(t, "object", defs["io.k8s.apimachinery.pkg.runtime.RawExtension"]["type"])
	assert.NotContains(t, defs["io.k8s.apimachinery.pkg.runtime.RawExtension"], "properties")
}

func TestSchemaV3Flavor(t *testing.T) {
	defs := schemaJSON(t, flavorV3, reflect.TypeOf(corev1.Pod{}))
	pod := defs["io.k8s.api.core.v1.Pod"]
	meta := pod["properties"].(map[string]interface{})["metadata"].(map[string]interface{})
	assert.Equal(t, []interface{}{map[string]interface{}{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}},
		meta["allOf"], "v3 wraps a described $ref in allOf")
	assert.NotContains(t, meta, "$ref")

	ios := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
	assert.Equal(t, []interface{}{map[string]interface{}{"type": "integer"}, map[string]interface{}{"type": "string"}}, ios["oneOf"])
	assert.Equal(t, "int-or-string", ios["format"])
	assert.NotContains(t, ios, "type")
	q := defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]
	assert.Equal(t, []interface{}{map[string]interface{}{"type": "string"}, map[string]interface{}{"type": "number"}}, q["oneOf"])
	assert.Equal(t, "string", defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["type"])
}

func TestSchemaErrors(t *testing.T) {
	g := newGenerator(flavorV2, &mergeInfo{}, nil)
	_, err := g.define(reflect.TypeOf(badMap{}))
	require.ErrorIs(t, err, ErrUnsupportedType)

	g = newGenerator(flavorV2, &mergeInfo{}, nil)
	name, err := g.define(reflect.TypeOf(recursive{}))
	require.NoError(t, err, "recursive types terminate")
	items := g.defs[name].Properties["children"].Items.Schema
	assert.Equal(t, "#/definitions/"+name, items.Ref.String())
}

func TestMergeSemantics(t *testing.T) {
	merge, err := clientGoMerge()
	require.NoError(t, err)
	m := &mergeInfo{s: merge}
	for _, tc := range []struct {
		def, field string
		want       semantics
	}{
		{"io.k8s.api.core.v1.PodSpec", "containers", semantics{listType: "map", listKeys: []string{"name"}}},
		{"io.k8s.api.core.v1.PodSpec", "volumes", semantics{listType: "map", listKeys: []string{"name"}}},
		{"io.k8s.api.core.v1.Container", "ports", semantics{listType: "map", listKeys: []string{"containerPort", "protocol"}}},
		{"io.k8s.api.core.v1.Container", "env", semantics{listType: "map", listKeys: []string{"name"}}},
		{"io.k8s.api.core.v1.Container", "volumeMounts", semantics{listType: "map", listKeys: []string{"mountPath"}}},
		{"io.k8s.api.core.v1.Container", "command", semantics{listType: "atomic"}},
		{"io.k8s.api.core.v1.PodStatus", "conditions", semantics{listType: "map", listKeys: []string{"type"}}},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", semantics{listType: "set"}},
		{"io.k8s.api.core.v1.PodSpec", "nodeSelector", semantics{mapType: "atomic"}},
		{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "labels", semantics{}},
		{"io.k8s.api.core.v1.PodSpec", "nosuchfield", semantics{}},
		{"no.such.Type", "x", semantics{}},
	} {
		assert.Equal(t, tc.want, m.field(tc.def, tc.field), tc.def+"."+tc.field)
	}
	assert.True(t, m.structAtomic("io.k8s.api.core.v1.ObjectReference") || m.structAtomic("io.k8s.api.core.v1.LocalObjectReference"),
		"some core references are atomic structs")
	assert.False(t, m.structAtomic("io.k8s.api.core.v1.PodSpec"))
	var nilInfo *mergeInfo
	assert.Equal(t, semantics{}, nilInfo.field("io.k8s.api.core.v1.PodSpec", "containers"))
}

func TestValidateResources(t *testing.T) {
	good := testResources()[0]
	for _, tc := range []struct {
		name   string
		mutate func(r *Resource)
	}{
		{"no kind", func(r *Resource) { r.GroupVersionKind.Kind = "" }},
		{"no plural", func(r *Resource) { r.Resource = "" }},
		{"nil object", func(r *Resource) { r.Object = nil }},
		{"list verb without list", func(r *Resource) { r.List = nil }},
		{"unnamed subresource", func(r *Resource) { r.Subresources = []Subresource{{Verbs: statusVerbs}} }},
		{"repeated subresource", func(r *Resource) {
			r.Subresources = []Subresource{{Name: "status"}, {Name: "status"}}
		}},
		{"subresource kind without version", func(r *Resource) {
			r.Subresources = []Subresource{{Name: "scale", GroupVersionKind: schema.GroupVersionKind{Kind: "Scale"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.mutate(&r)
			_, err := NewV2([]Resource{r}, testInfo, WithMergeSchema(nil))
			require.ErrorIs(t, err, ErrInvalidResource)
		})
	}
	_, err := NewV3([]Resource{good, good}, testInfo, WithMergeSchema(nil))
	require.ErrorIs(t, err, ErrInvalidResource, "duplicate resources")
}
