package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// NewV2 builds the Swagger 2.0 document kube-apiserver serves at
// /openapi/v2 for the given resources. Its Protobuf is the gnostic
// openapi_v2.Document that kubectl downloads.
func NewV2(resources []Resource, info Info, opts ...Option) (*Document, error) {
	m, err := newModel(resources, info, opts)
	if err != nil {
		return nil, err
	}
	return m.v2()
}

func (m *model) v2() (*Document, error) {
	g, err := m.definitions(flavorV2)
	if err != nil {
		return nil, err
	}
	sw := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: m.info.Title, Version: m.info.Version}},
		Paths:       &spec.Paths{Paths: make(map[string]spec.PathItem, len(m.paths))},
		Definitions: make(spec.Definitions, len(g.defs)),
		SecurityDefinitions: spec.SecurityDefinitions{securityName: &spec.SecurityScheme{
			SecuritySchemeProps: spec.SecuritySchemeProps{Type: "apiKey", Name: "authorization", In: "header", Description: securityDesc},
		}},
		Security: []map[string][]string{{securityName: {}}},
	}}
	for name, s := range g.defs {
		sw.Definitions[name] = *s
	}
	for _, p := range m.paths {
		item := spec.PathItem{}
		for _, prm := range p.params {
			item.Parameters = append(item.Parameters, prm.v2())
		}
		for i := range p.ops {
			op, err := v2Operation(g, &p.ops[i])
			if err != nil {
				return nil, err
			}
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
		sw.Paths.Paths[p.path] = item
	}
	j, err := json.Marshal(sw)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 document: %w", err)
	}
	return newDocument(j, m.built, v2Proto), nil
}

func v2Operation(g *generator, op *operation) (*spec.Operation, error) {
	o := &spec.Operation{
		OperationProps: spec.OperationProps{
			ID:          op.id,
			Description: op.desc,
			Consumes:    op.consumes,
			Produces:    op.produces,
			Schemes:     []string{"https"},
			Tags:        op.tags,
			Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
		},
		VendorExtensible: spec.VendorExtensible{Extensions: op.extensions()},
	}
	if op.body != nil {
		s, err := g.reference(op.body, "")
		if err != nil {
			return nil, err
		}
		o.Parameters = append(o.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: op.bodyReq, Schema: &s,
		}})
	}
	for _, prm := range op.query {
		o.Parameters = append(o.Parameters, prm.v2())
	}
	for _, r := range op.responses {
		resp := spec.Response{ResponseProps: spec.ResponseProps{Description: responseDescriptions[r.code]}}
		if r.typ != nil {
			s, err := g.reference(r.typ, "")
			if err != nil {
				return nil, err
			}
			resp.Schema = &s
		}
		o.Responses.StatusCodeResponses[r.code] = resp
	}
	o.Responses.StatusCodeResponses[http.StatusUnauthorized] = spec.Response{
		ResponseProps: spec.ResponseProps{Description: responseDescriptions[http.StatusUnauthorized]}}
	return o, nil
}
