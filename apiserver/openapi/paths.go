package openapi

import (
	"net/http"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Media types of request and response bodies.
var (
	mimeAny       = []string{"*/*"}
	mimeObjects   = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	mimeWithWatch = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
		"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	mimePatch = []string{"application/json-patch+json", "application/merge-patch+json",
		"application/strategic-merge-patch+json", "application/apply-patch+yaml"}
)

// Go types of the meta.k8s.io bodies operations use.
var (
	typeStatus        = reflect.TypeOf(metav1.Status{})
	typeDeleteOptions = reflect.TypeOf(metav1.DeleteOptions{})
	typePatch         = reflect.TypeOf(metav1.Patch{})
	typeResourceList  = reflect.TypeOf(metav1.APIResourceList{})
	typeAPIGroup      = reflect.TypeOf(metav1.APIGroup{})
	typeAPIGroupList  = reflect.TypeOf(metav1.APIGroupList{})
	typeAPIVersions   = reflect.TypeOf(metav1.APIVersions{})
)

// v3 documents of the discovery roots /api/ and /apis/.
const (
	docCoreRoot = "api"
	docAPIsRoot = "apis"
)

// operation is one HTTP operation, independent of the OpenAPI version.
type operation struct {
	method    string
	id        string
	action    string // x-kubernetes-action; empty for discovery
	gvk       *schema.GroupVersionKind
	query     []param
	body      reflect.Type
	bodyReq   bool
	consumes  []string
	produces  []string
	responses []response
	tags      []string
	desc      string
}

type response struct {
	code int
	typ  reflect.Type
}

// pathItem is one URL template with its operations. doc is the v3 document
// ("api/v1", "apis/apps/v1", "apis/apps", "api", "apis") it belongs to.
type pathItem struct {
	path   string
	doc    string
	params []param // path-level: name, namespace, pretty
	ops    []operation
}

// groupVersionPath is the v3 document name of gv: api/v1 or apis/<g>/<v>.
func groupVersionPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// groupPrefix is the operation-id and tag prefix of a group:
// "" → Core, rbac.authorization.k8s.io → RbacAuthorization.
func groupPrefix(group string) string {
	if group == "" {
		return "Core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	for _, part := range strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' }) {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// tag is the operation tag: core_v1, apps_v1, rbacAuthorization_v1.
func tag(gv schema.GroupVersion) string {
	return lowerFirst(groupPrefix(gv.Group)) + "_" + gv.Version
}

// buildPaths lays out every path kube-apiserver would serve for the
// resources, sorted by path.
func buildPaths(rs []*served, discovery bool) []pathItem {
	var items []pathItem
	byPath := map[string]int{}
	add := func(p pathItem) {
		if i, ok := byPath[p.path]; ok {
			items[i].ops = append(items[i].ops, p.ops...)
			return
		}
		byPath[p.path] = len(items)
		items = append(items, p)
	}
	for _, r := range rs {
		for _, p := range resourcePaths(r) {
			if len(p.ops) > 0 {
				add(p)
			}
		}
	}
	if discovery {
		for _, p := range discoveryPaths(rs) {
			add(p)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].path < items[j].path })
	return items
}

func resourcePaths(r *served) []pathItem {
	gvk := r.GroupVersionKind
	gv := gvk.GroupVersion()
	doc := groupVersionPath(gv)
	prefix := "/" + doc
	id := groupPrefix(gv.Group) + upperFirst(gv.Version)
	scope := ""
	collection := prefix + "/" + r.Resource.Resource
	pathParams := []param{}
	if r.Namespaced {
		scope = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + r.Resource.Resource
		pathParams = append(pathParams, paramNamespace)
	}
	item := collection + "/{name}"
	tags := []string{tag(gv)}
	kindID := id + scope + gvk.Kind
	o := func(method, verb, action string) operation {
		return operation{method: method, id: verb + kindID, action: action, gvk: &gvk, tags: tags,
			consumes: mimeAny, produces: mimeObjects}
	}

	coll := pathItem{path: collection, doc: doc, params: append(append([]param{}, pathParams...), paramPretty)}
	if r.verbs[verbList] {
		op := o(http.MethodGet, "list", "list")
		op.produces = mimeWithWatch
		op.query = listParams
		op.responses = []response{{http.StatusOK, r.listType}}
		op.desc = "list or watch objects of kind " + gvk.Kind
		coll.ops = append(coll.ops, op)
	}
	if r.verbs[verbCreate] {
		op := o(http.MethodPost, "create", "post")
		op.query = writeParams
		op.body, op.bodyReq = r.objType, true
		op.responses = []response{{http.StatusOK, r.objType}, {http.StatusCreated, r.objType}, {http.StatusAccepted, r.objType}}
		op.desc = "create " + articleKind(gvk.Kind)
		coll.ops = append(coll.ops, op)
	}
	if r.verbs[verbDeleteCollection] {
		op := o(http.MethodDelete, "deletecollection", "deletecollection")
		op.query = deleteCollectionParams
		op.body = typeDeleteOptions
		op.responses = []response{{http.StatusOK, typeStatus}}
		op.desc = "delete collection of " + gvk.Kind
		coll.ops = append(coll.ops, op)
	}

	named := pathItem{path: item, doc: doc, params: append([]param{nameParam(gvk.Kind)}, coll.params...)}
	deleted := typeStatus
	if r.DeleteReturnsObject {
		deleted = r.objType
	}
	if r.verbs[verbGet] {
		op := o(http.MethodGet, "read", "get")
		op.responses = []response{{http.StatusOK, r.objType}}
		op.desc = "read the specified " + gvk.Kind
		named.ops = append(named.ops, op)
	}
	if r.verbs[verbUpdate] {
		op := o(http.MethodPut, "replace", "put")
		op.query = writeParams
		op.body, op.bodyReq = r.objType, true
		op.responses = []response{{http.StatusOK, r.objType}, {http.StatusCreated, r.objType}}
		op.desc = "replace the specified " + gvk.Kind
		named.ops = append(named.ops, op)
	}
	if r.verbs[verbDelete] {
		op := o(http.MethodDelete, "delete", "delete")
		op.query = deleteParams
		op.body = typeDeleteOptions
		op.responses = []response{{http.StatusOK, deleted}, {http.StatusAccepted, deleted}}
		op.desc = "delete " + articleKind(gvk.Kind)
		named.ops = append(named.ops, op)
	}
	if r.verbs[verbPatch] {
		op := o(http.MethodPatch, "patch", "patch")
		op.query = patchParams
		op.body, op.bodyReq = typePatch, true
		op.consumes = mimePatch
		op.responses = []response{{http.StatusOK, r.objType}, {http.StatusCreated, r.objType}}
		op.desc = "partially update the specified " + gvk.Kind
		named.ops = append(named.ops, op)
	}
	out := []pathItem{coll, named}

	if r.Namespaced && r.verbs[verbList] {
		op := o(http.MethodGet, "list", "list")
		op.id = "list" + id + gvk.Kind + "ForAllNamespaces"
		op.produces = mimeWithWatch
		op.query = listParams
		op.responses = []response{{http.StatusOK, r.listType}}
		op.desc = "list or watch objects of kind " + gvk.Kind
		out = append(out, pathItem{path: prefix + "/" + r.Resource.Resource, doc: doc, params: []param{paramPretty}, ops: []operation{op}})
	}

	for _, s := range r.subs {
		out = append(out, subresourcePath(s, named, kindID, tags))
	}
	return out
}

func subresourcePath(s servedSub, parent pathItem, kindID string, tags []string) pathItem {
	p := pathItem{path: parent.path + "/" + s.name, doc: parent.doc,
		params: append([]param{nameParam(s.gvk.Kind)}, parent.params[1:]...)}
	gvk := s.gvk
	id := kindID + upperFirst(s.name)
	o := func(method, verb, action string) operation {
		return operation{method: method, id: verb + id, action: action, gvk: &gvk, tags: tags,
			consumes: mimeAny, produces: mimeObjects}
	}
	if s.verbs[verbGet] {
		op := o(http.MethodGet, "read", "get")
		op.responses = []response{{http.StatusOK, s.objType}}
		op.desc = "read " + s.name + " of the specified " + gvk.Kind
		p.ops = append(p.ops, op)
	}
	if s.verbs[verbCreate] {
		op := o(http.MethodPost, "create", "post")
		op.query = writeParams
		op.body, op.bodyReq = s.objType, true
		op.responses = []response{{http.StatusOK, s.objType}, {http.StatusCreated, s.objType}, {http.StatusAccepted, s.objType}}
		op.desc = "create " + s.name + " of " + articleKind(gvk.Kind)
		p.ops = append(p.ops, op)
	}
	if s.verbs[verbUpdate] {
		op := o(http.MethodPut, "replace", "put")
		op.query = writeParams
		op.body, op.bodyReq = s.objType, true
		op.responses = []response{{http.StatusOK, s.objType}, {http.StatusCreated, s.objType}}
		op.desc = "replace " + s.name + " of the specified " + gvk.Kind
		p.ops = append(p.ops, op)
	}
	if s.verbs[verbPatch] {
		op := o(http.MethodPatch, "patch", "patch")
		op.query = patchParams
		op.body, op.bodyReq = typePatch, true
		op.consumes = mimePatch
		op.responses = []response{{http.StatusOK, s.objType}, {http.StatusCreated, s.objType}}
		op.desc = "partially update " + s.name + " of the specified " + gvk.Kind
		p.ops = append(p.ops, op)
	}
	return p
}

func articleKind(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// discoveryPaths are the GET endpoints of API discovery: /api/, /apis/,
// /apis/<group>/ and the per group-version resource lists.
func discoveryPaths(rs []*served) []pathItem {
	var out []pathItem
	gvs := map[schema.GroupVersion]bool{}
	groups := map[string]bool{}
	for _, r := range rs {
		gvs[r.GroupVersionKind.GroupVersion()] = true
		groups[r.GroupVersionKind.Group] = true
	}
	get := func(id, desc string, typ reflect.Type, tags ...string) operation {
		return operation{method: http.MethodGet, id: id, desc: desc, tags: tags,
			consumes: mimeObjects, produces: mimeObjects,
			responses: []response{{http.StatusOK, typ}}}
	}
	for gv := range gvs {
		doc := groupVersionPath(gv)
		id := groupPrefix(gv.Group) + upperFirst(gv.Version)
		out = append(out, pathItem{path: "/" + doc + "/", doc: doc, ops: []operation{
			get("get"+id+"APIResources", "get available resources", typeResourceList, tag(gv))}})
	}
	for g := range groups {
		if g == "" {
			out = append(out, pathItem{path: "/api/", doc: docCoreRoot, ops: []operation{
				get("getCoreAPIVersions", "get available API versions", typeAPIVersions, "core")}})
			continue
		}
		out = append(out, pathItem{path: "/apis/" + g + "/", doc: "apis/" + g, ops: []operation{
			get("get"+groupPrefix(g)+"APIGroup", "get information of a group", typeAPIGroup, lowerFirst(groupPrefix(g)))}})
	}
	if len(groups) > 1 || (len(groups) == 1 && !groups[""]) {
		out = append(out, pathItem{path: "/apis/", doc: docAPIsRoot, ops: []operation{
			get("getAPIVersions", "get available API versions", typeAPIGroupList, "apis")}})
	}
	return out
}
