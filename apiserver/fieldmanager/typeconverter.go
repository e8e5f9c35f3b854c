package fieldmanager

import (
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The merge schema. kube-apiserver builds its type converter from its
// OpenAPI models; the list, map and struct semantics in them come from the
// +listType/+listMapKey/+mapType/+structType markers of k8s.io/api. client-go
// compiles the very same semantics into the structured-merge-diff schema of
// its apply configurations, and podkit's OpenAPI documents take their
// x-kubernetes-* extensions from it too, so it is the schema used here: no
// document to generate and parse at start-up, and the same answer.
//
// client-go only exports it behind a TypeConverter; a typed value made by
// that converter carries a pointer to the whole schema, which is how it is
// read here. It lacks autoscaling/v1 Scale (Scale has no apply
// configuration), which the scale subresource needs, so Scale is added.

// scaleSchema describes autoscaling/v1 Scale as kube-apiserver's OpenAPI
// models do.
const scaleSchema = typed.YAMLObject(`types:
- name: io.k8s.api.autoscaling.v1.Scale
  map:
    fields:
    - name: apiVersion
      type:
        scalar: string
    - name: kind
      type:
        scalar: string
    - name: metadata
      type:
        namedType: io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta
      default: {}
    - name: spec
      type:
        namedType: io.k8s.api.autoscaling.v1.ScaleSpec
      default: {}
    - name: status
      type:
        namedType: io.k8s.api.autoscaling.v1.ScaleStatus
      default: {}
- name: io.k8s.api.autoscaling.v1.ScaleSpec
  map:
    fields:
    - name: replicas
      type:
        scalar: numeric
- name: io.k8s.api.autoscaling.v1.ScaleStatus
  map:
    fields:
    - name: replicas
      type:
        scalar: numeric
      default: 0
    - name: selector
      type:
        scalar: string
`)

// loadParser returns a parser over client-go's merge schema plus Scale.
func loadParser() (*typed.Parser, error) {
	probe := runtime.NewScheme()
	probe.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.ConfigMap{})
	cm := &corev1.ConfigMap{}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	tv, err := applyconfigurations.NewTypeConverter(probe).ObjectToTyped(cm)
	if err != nil {
		return nil, fmt.Errorf("loading client-go's merge schema: %w", err)
	}
	extra, err := typed.NewParser(scaleSchema)
	if err != nil {
		return nil, fmt.Errorf("parsing the Scale schema: %w", err)
	}
	base := tv.Schema().Types
	types := append(slices.Clip(base), extra.Schema.Types...)
	return &typed.Parser{Schema: smdschema.Schema{Types: types}}, nil
}

// typeConverter turns objects of scheme's Go types into typed values of the
// merge schema and back, naming each kind's schema type by its OpenAPI
// definition name (io.k8s.api.apps.v1.Deployment).
type typeConverter struct {
	scheme *runtime.Scheme
	parser *typed.Parser
	names  sync.Map // schema.GroupVersionKind -> string
}

var _ managedfields.TypeConverter = (*typeConverter)(nil)

// typeFor returns the schema type of gvk, or ErrUnknownKind.
func (c *typeConverter) typeFor(gvk schema.GroupVersionKind) (typed.ParseableType, error) {
	if v, ok := c.names.Load(gvk); ok {
		return c.parser.Type(v.(string)), nil
	}
	name, err := c.scheme.ToOpenAPIDefinitionName(gvk)
	if err != nil {
		return typed.ParseableType{}, fmt.Errorf("%v: %w: %w", gvk, ErrUnknownKind, err)
	}
	t := c.parser.Type(name)
	if !t.IsValid() {
		return typed.ParseableType{}, fmt.Errorf("%v (%s): %w", gvk, name, ErrUnknownKind)
	}
	c.names.Store(gvk, name)
	return t, nil
}

// ObjectToTyped implements managedfields.TypeConverter.
func (c *typeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	t, err := c.typeFor(obj.GetObjectKind().GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return t.FromUnstructured(u.UnstructuredContent(), opts...)
	}
	return t.FromStructured(obj, opts...)
}

// TypedToObject implements managedfields.TypeConverter. The result is
// unstructured; the field manager converts it to the Go type.
func (c *typeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	m, ok := v.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("typed value of %T is not an object", v.AsValue().Unstructured())
	}
	return &unstructured.Unstructured{Object: m}, nil
}
