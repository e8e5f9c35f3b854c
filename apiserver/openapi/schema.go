package openapi

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// flavor selects the OpenAPI version a schema is rendered for.
type flavor int

const (
	flavorV2 flavor = iota
	flavorV3
)

func (f flavor) refPrefix() string {
	if f == flavorV3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// Extension keys as Kubernetes spells them.
const (
	extGVK           = "x-kubernetes-group-version-kind"
	extAction        = "x-kubernetes-action"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extListType      = "x-kubernetes-list-type"
	extListMapKeys   = "x-kubernetes-list-map-keys"
	extMapType       = "x-kubernetes-map-type"
)

// Methods the Go types carry that the Kubernetes OpenAPI generator reads.
type (
	modelNamer interface{ OpenAPIModelName() string }
	typeFormat interface {
		OpenAPISchemaType() []string
		OpenAPISchemaFormat() string
	}
	v3OneOf    interface{ OpenAPIV3OneOfTypes() []string }
	swaggerDoc interface{ SwaggerDoc() map[string]string }
)

var timeType = reflect.TypeOf(time.Time{})

// Descriptions for the value types that carry no SwaggerDoc.
var builtinDescriptions = map[string]string{
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   "A fixed-point number with an optional suffix, written as a string: a binary SI suffix (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI suffix (n, u, m, \"\", k, M, G, T, P, E) or a decimal exponent (e3, E6). Examples: \"100m\", \"1.5Gi\", \"2\".",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "A value that is either an integer or a string, such as a port number or a port name, or an absolute count or a percentage.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       "A timestamp, serialised as an RFC 3339 string with second precision.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":  "A timestamp, serialised as an RFC 3339 string with microsecond precision.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":   "A duration, serialised as a Go duration string such as \"1h30m\".",
	"io.k8s.apimachinery.pkg.runtime.RawExtension":    "An embedded object of any kind, carried as raw JSON with its own apiVersion and kind.",
}

// generator renders Go types as OpenAPI schema definitions by reflection.
type generator struct {
	flavor flavor
	merge  *mergeInfo
	gvks   map[reflect.Type][]schema.GroupVersionKind

	defs  map[string]*spec.Schema
	types map[string]reflect.Type
	// deps records, per definition, the definitions it references.
	deps map[string]map[string]bool
}

func newGenerator(f flavor, merge *mergeInfo, gvks map[reflect.Type][]schema.GroupVersionKind) *generator {
	return &generator{
		flavor: f, merge: merge, gvks: gvks,
		defs:  map[string]*spec.Schema{},
		types: map[string]reflect.Type{},
		deps:  map[string]map[string]bool{},
	}
}

// definitionName is the Kubernetes name of a named Go type:
// k8s.io/api/core/v1.Pod becomes io.k8s.api.core.v1.Pod.
func definitionName(t reflect.Type) string {
	// A name ending in another type's name was promoted from an embedded
	// field (every object embeds metav1.TypeMeta), so it is not t's own.
	if n, ok := method[modelNamer](t); ok && strings.HasSuffix(n.OpenAPIModelName(), "."+t.Name()) {
		return n.OpenAPIModelName()
	}
	parts := strings.Split(t.PkgPath(), "/")
	if strings.Contains(parts[0], ".") {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Join(parts, ".") + "." + t.Name()
}

// method returns the zero value of t (or of *t) as I when either implements it.
func method[I any](t reflect.Type) (I, bool) {
	if i, ok := reflect.Zero(t).Interface().(I); ok {
		return i, true
	}
	i, ok := reflect.New(t).Interface().(I)
	return i, ok
}

func (g *generator) ref(from, name string) spec.Schema {
	if from != "" {
		if g.deps[from] == nil {
			g.deps[from] = map[string]bool{}
		}
		g.deps[from][name] = true
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(g.flavor.refPrefix() + name)}}
}

// reference returns a $ref to the definition of the named type t, defining
// it first if needed. from is the definition that holds the reference.
func (g *generator) reference(t reflect.Type, from string) (spec.Schema, error) {
	name, err := g.define(t)
	if err != nil {
		return spec.Schema{}, err
	}
	return g.ref(from, name), nil
}

// define makes sure the named type t has a definition and returns its name.
func (g *generator) define(t reflect.Type) (string, error) {
	name := definitionName(t)
	if prev, ok := g.types[name]; ok {
		if prev != t {
			return "", fmt.Errorf("types %v and %v share the definition name %s: %w", prev, t, name, ErrUnsupportedType)
		}
		return name, nil
	}
	g.types[name] = t
	def := &spec.Schema{}
	g.defs[name] = def // placeholder, so recursive types terminate

	var s spec.Schema
	if tf, ok := method[typeFormat](t); ok {
		s = g.valueTypeSchema(t, tf)
	} else if t.Kind() == reflect.Struct {
		var err error
		if s, err = g.structSchema(t, name); err != nil {
			return "", err
		}
		if g.merge.structAtomic(name) {
			s.AddExtension(extMapType, "atomic")
		}
	} else {
		var err error
		if s, err = g.schemaOf(t, name); err != nil {
			return "", err
		}
	}
	if s.Description == "" {
		s.Description = builtinDescriptions[name]
	}
	if gvks := g.gvks[t]; len(gvks) > 0 {
		s.AddExtension(extGVK, gvkList(gvks))
	}
	*def = s
	return name, nil
}

// valueTypeSchema renders a type that serialises as a JSON scalar and says
// so with OpenAPISchemaType/OpenAPISchemaFormat (Quantity, IntOrString,
// Time, MicroTime, Duration). In v3 the types that list alternatives get a
// oneOf, as the Kubernetes generator emits.
func (g *generator) valueTypeSchema(t reflect.Type, tf typeFormat) spec.Schema {
	var s spec.Schema
	s.Description = typeDoc(t)
	s.Format = tf.OpenAPISchemaFormat()
	if o, ok := method[v3OneOf](t); ok && g.flavor == flavorV3 {
		for _, typ := range o.OpenAPIV3OneOfTypes() {
			s.OneOf = append(s.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}}})
		}
		return s
	}
	s.Type = tf.OpenAPISchemaType()
	return s
}

func typeDoc(t reflect.Type) string {
	return fieldDocs(t)[""]
}

// fieldDocs returns the descriptions k8s.io types carry in their generated
// SwaggerDoc method: "" for the type, and one per JSON field name.
func fieldDocs(t reflect.Type) map[string]string {
	d, ok := method[swaggerDoc](t)
	if !ok {
		return nil
	}
	docs := d.SwaggerDoc()
	if t.Kind() != reflect.Struct {
		return docs
	}
	// The same map from an embedded field means the method was promoted.
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.Anonymous {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ed, ok := method[swaggerDoc](ft); ok && sameMap(ed.SwaggerDoc(), docs) {
			return nil
		}
	}
	return docs
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// schemaOf returns the schema of a value of type t, referencing named
// structs and value types through definitions. from is the definition
// being built.
func (g *generator) schemaOf(t reflect.Type, from string) (spec.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return primitive("string", "date-time"), nil
	}
	if t.Name() != "" && t.PkgPath() != "" {
		if _, ok := method[typeFormat](t); ok {
			return g.reference(t, from)
		}
		if t.Kind() == reflect.Struct {
			return g.reference(t, from)
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		return g.structSchema(t, from)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return primitive("string", "byte"), nil
		}
		items, err := g.schemaOf(t.Elem(), from)
		if err != nil {
			return spec.Schema{}, err
		}
		s := primitive("array", "")
		s.Items = &spec.SchemaOrArray{Schema: &items}
		return s, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return spec.Schema{}, fmt.Errorf("map key of %v is not a string: %w", t, ErrUnsupportedType)
		}
		elem, err := g.schemaOf(t.Elem(), from)
		if err != nil {
			return spec.Schema{}, err
		}
		s := primitive("object", "")
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &elem}
		return s, nil
	case reflect.Interface:
		return primitive("object", ""), nil
	case reflect.Bool:
		return primitive("boolean", ""), nil
	case reflect.Int8, reflect.Uint8:
		return primitive("integer", "byte"), nil
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint16:
		return primitive("integer", "int32"), nil
	case reflect.Int64, reflect.Uint32, reflect.Uint64:
		return primitive("integer", "int64"), nil
	case reflect.Float32:
		return primitive("number", "float"), nil
	case reflect.Float64:
		return primitive("number", "double"), nil
	case reflect.String:
		return primitive("string", ""), nil
	}
	return spec.Schema{}, fmt.Errorf("%v (kind %v): %w", t, t.Kind(), ErrUnsupportedType)
}

func primitive(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}, Format: format}}
}

// structSchema renders a struct as an object. owner names the definition
// whose properties these are (inlined structs contribute to their owner).
func (g *generator) structSchema(t reflect.Type, owner string) (spec.Schema, error) {
	s := primitive("object", "")
	s.Description = typeDoc(t)
	props := map[string]spec.Schema{}
	var required []string
	if err := g.addFields(t, owner, props, &required); err != nil {
		return spec.Schema{}, err
	}
	if len(props) > 0 {
		s.Properties = props
	}
	s.Required = required
	return s, nil
}

// addFields adds the JSON fields of struct t to props, following
// encoding/json: "-" is skipped, embedded structs without a name and
// ",inline" fields are flattened into the parent. Required fields follow
// isRequired.
func (g *generator) addFields(t reflect.Type, owner string, props map[string]spec.Schema, required *[]string) error {
	docs := fieldDocs(t)
	declaring := definitionName(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		inline := name == "" && (f.Anonymous || hasOpt(opts, "inline"))
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if _, valueType := method[typeFormat](ft); !valueType {
					if err := g.addFields(ft, owner, props, required); err != nil {
						return err
					}
					continue
				}
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := props[name]; dup {
			continue
		}
		ps, err := g.schemaOf(f.Type, owner)
		if err != nil {
			return fmt.Errorf("%v.%s: %w", t, f.Name, err)
		}
		ext := spec.Extensions{}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			ext[extPatchStrategy] = v
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			ext[extPatchMergeKey] = v
		}
		g.addSemantics(ext, f.Type, owner, name)
		props[name] = g.decorate(ps, docs[name], ext)
		if isRequired(declaring, name, hasOpt(opts, "omitempty")) {
			*required = append(*required, name)
		}
	}
	return nil
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

func (g *generator) addSemantics(ext spec.Extensions, ft reflect.Type, owner, name string) {
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	sem := g.merge.field(owner, name)
	switch ft.Kind() {
	case reflect.Slice, reflect.Array:
		if ft.Elem().Kind() == reflect.Uint8 || sem.listType == "" {
			return
		}
		ext[extListType] = sem.listType
		if len(sem.listKeys) > 0 {
			keys := make([]interface{}, len(sem.listKeys))
			for i, k := range sem.listKeys {
				keys[i] = k
			}
			ext[extListMapKeys] = keys
		}
	case reflect.Map, reflect.Struct:
		if sem.mapType != "" {
			ext[extMapType] = sem.mapType
		}
	}
}

// decorate adds a field's description and extensions to its schema. A v3
// $ref takes no siblings, so there the reference moves into an allOf, as
// the Kubernetes generator does.
func (g *generator) decorate(s spec.Schema, desc string, ext spec.Extensions) spec.Schema {
	if desc == "" && len(ext) == 0 {
		return s
	}
	if g.flavor == flavorV3 && s.Ref.String() != "" {
		s = spec.Schema{SchemaProps: spec.SchemaProps{AllOf: []spec.Schema{s}}}
	}
	s.Description = desc
	for k, v := range ext {
		s.AddExtension(k, v)
	}
	return s
}

func gvkList(gvks []schema.GroupVersionKind) []interface{} {
	out := make([]interface{}, len(gvks))
	for i, gvk := range gvks {
		out[i] = gvkMap(gvk)
	}
	return out
}

func gvkMap(gvk schema.GroupVersionKind) map[string]interface{} {
	return map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// addGVK records that Go type t is served as gvk.
func addGVK(m map[reflect.Type][]schema.GroupVersionKind, t reflect.Type, gvk schema.GroupVersionKind) {
	for _, have := range m[t] {
		if have == gvk {
			return
		}
	}
	m[t] = append(m[t], gvk)
	sort.Slice(m[t], func(i, j int) bool {
		a, b := m[t][i], m[t][j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
}
