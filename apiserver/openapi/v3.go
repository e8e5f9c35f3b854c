package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// V3 holds the OpenAPI 3.0 documents kube-apiserver serves under
// /openapi/v3: one per group version ("api/v1", "apis/apps/v1"), one per
// discovery root ("api", "apis", "apis/apps"), and the discovery document
// that lists them with content-hashed URLs.
type V3 struct {
	names     []string
	docs      map[string]*Document
	discovery *Document
}

// NewV3 builds the OpenAPI 3.0 documents for the given resources.
func NewV3(resources []Resource, info Info, opts ...Option) (*V3, error) {
	m, err := newModel(resources, info, opts)
	if err != nil {
		return nil, err
	}
	return m.v3()
}

// Names returns the document names, sorted: "api/v1", "apis/apps/v1", ...
func (v *V3) Names() []string { return append([]string(nil), v.names...) }

// Document returns the document of a group version path such as
// "apis/apps/v1".
func (v *V3) Document(name string) (*Document, bool) {
	d, ok := v.docs[name]
	return d, ok
}

// Discovery returns the /openapi/v3 document:
// {"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=..."}}}.
func (v *V3) Discovery() *Document { return v.discovery }

// ServerRelativeURL returns the immutable, hashed URL of a document.
func (v *V3) ServerRelativeURL(name string) string {
	d, ok := v.docs[name]
	if !ok {
		return ""
	}
	return serverRelativeURL(name, d.etag)
}

func serverRelativeURL(name, hash string) string {
	u := url.URL{Path: "/openapi/v3/" + name, RawQuery: url.Values{"hash": {hash}}.Encode()}
	return u.String()
}

type v3Discovery struct {
	Paths map[string]v3DiscoveryEntry `json:"paths"`
}

type v3DiscoveryEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

func (m *model) v3() (*V3, error) {
	g, err := m.definitions(flavorV3)
	if err != nil {
		return nil, err
	}
	byDoc := map[string][]pathItem{}
	for _, p := range m.paths {
		byDoc[p.doc] = append(byDoc[p.doc], p)
	}
	v := &V3{docs: make(map[string]*Document, len(byDoc))}
	disco := v3Discovery{Paths: make(map[string]v3DiscoveryEntry, len(byDoc))}
	for name, paths := range byDoc {
		j, err := m.v3Document(g, paths)
		if err != nil {
			return nil, fmt.Errorf("openapi: v3 document %s: %w", name, err)
		}
		d := newDocument(j, m.built, v3Proto)
		v.docs[name] = d
		v.names = append(v.names, name)
		disco.Paths[name] = v3DiscoveryEntry{ServerRelativeURL: serverRelativeURL(name, d.etag)}
	}
	sort.Strings(v.names)
	dj, err := json.Marshal(disco)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v3 discovery: %w", err)
	}
	v.discovery = newDocument(dj, m.built, nil)
	return v, nil
}

func (m *model) v3Document(g *generator, paths []pathItem) ([]byte, error) {
	doc := &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    &spec.Info{InfoProps: spec.InfoProps{Title: m.info.Title, Version: m.info.Version}},
		Paths:   &spec3.Paths{Paths: make(map[string]*spec3.Path, len(paths))},
		Components: &spec3.Components{
			Schemas: map[string]*spec.Schema{},
			SecuritySchemes: spec3.SecuritySchemes{securityName: &spec3.SecurityScheme{
				SecuritySchemeProps: spec3.SecuritySchemeProps{Type: "apiKey", Name: "authorization", In: "header", Description: securityDesc},
			}},
		},
		SecurityRequirement: []map[string][]string{{securityName: {}}},
	}
	var roots []string
	for _, p := range paths {
		item := &spec3.Path{}
		for _, prm := range p.params {
			item.Parameters = append(item.Parameters, prm.v3())
		}
		for i := range p.ops {
			op, refs, err := v3Operation(g, &p.ops[i])
			if err != nil {
				return nil, err
			}
			roots = append(roots, refs...)
			switch p.ops[i].method {
			case http.MethodGet:
				item.Get = op
			case http.MethodPost:
				item.Post = op
			case http.MethodPut:
				item.Put = op
			case http.MethodPatch:
				item.Patch = op
			case http.MethodDelete:
				item.Delete = op
			}
		}
		doc.Paths.Paths[p.path] = item
	}
	// Only the schemas this document's operations reach, as kube-apiserver
	// prunes each group version's document.
	for _, name := range g.reachable(roots) {
		doc.Components.Schemas[name] = g.defs[name]
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	return j, nil
}

// reachable returns the definitions reachable from roots.
func (g *generator) reachable(roots []string) []string {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		for d := range g.deps[n] {
			if !seen[d] {
				stack = append(stack, d)
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// v3Operation renders op and returns the definitions it references.
func v3Operation(g *generator, op *operation) (*spec3.Operation, []string, error) {
	var refs []string
	o := &spec3.Operation{
		OperationProps: spec3.OperationProps{
			Tags:        op.tags,
			Description: op.desc,
			OperationId: op.id,
			Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
		},
		VendorExtensible: spec.VendorExtensible{Extensions: op.extensions()},
	}
	for _, prm := range op.query {
		o.Parameters = append(o.Parameters, prm.v3())
	}
	if op.body != nil {
		name, err := g.define(op.body)
		if err != nil {
			return nil, nil, err
		}
		refs = append(refs, name)
		content := make(map[string]*spec3.MediaType, len(op.consumes))
		for _, mt := range op.consumes {
			s := g.ref("", name)
			content[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &s}}
		}
		o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{Content: content, Required: op.bodyReq}}
	}
	for _, r := range op.responses {
		resp := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: responseDescriptions[r.code]}}
		if r.typ != nil {
			name, err := g.define(r.typ)
			if err != nil {
				return nil, nil, err
			}
			refs = append(refs, name)
			resp.Content = make(map[string]*spec3.MediaType, len(op.produces))
			for _, mt := range op.produces {
				s := g.ref("", name)
				resp.Content[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: &s}}
			}
		}
		o.Responses.StatusCodeResponses[r.code] = resp
	}
	o.Responses.StatusCodeResponses[http.StatusUnauthorized] = &spec3.Response{
		ResponseProps: spec3.ResponseProps{Description: responseDescriptions[http.StatusUnauthorized]}}
	return o, refs, nil
}
