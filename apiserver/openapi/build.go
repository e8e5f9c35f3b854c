package openapi

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// model is what both OpenAPI versions are rendered from: validated
// resources, their paths, and the Go types to describe.
type model struct {
	cfg   *config
	info  Info
	paths []pathItem
	merge *mergeInfo
	gvks  map[reflect.Type][]schema.GroupVersionKind
	built time.Time
}

func newModel(resources []Resource, info Info, opts []Option) (*model, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	rs, err := validate(resources)
	if err != nil {
		return nil, err
	}
	if info.Title == "" {
		info.Title = "Kubernetes"
	}
	if info.Version == "" {
		info.Version = "unversioned" // both OpenAPI versions require one
	}
	m := &model{cfg: cfg, info: info, gvks: map[reflect.Type][]schema.GroupVersionKind{}, built: cfg.now()}
	merge := cfg.merge
	if !cfg.mergeSet {
		if merge, err = clientGoMerge(); err != nil {
			return nil, err
		}
	}
	m.merge = &mergeInfo{s: merge}
	for _, r := range rs {
		addGVK(m.gvks, r.objType, r.GroupVersionKind)
		if r.listType != nil {
			addGVK(m.gvks, r.listType, r.listGVK)
		}
		for _, s := range r.subs {
			addGVK(m.gvks, s.objType, s.gvk)
		}
	}
	if cfg.scheme != nil {
		for gvk, t := range cfg.scheme.AllKnownTypes() {
			if gvk.Version != runtime.APIVersionInternal {
				addGVK(m.gvks, t, gvk)
			}
		}
	}
	m.paths = buildPaths(rs, !cfg.noDiscover)
	return m, nil
}

// definitions renders, for one OpenAPI version, every type the operations
// use, and returns the generator holding them.
func (m *model) definitions(f flavor) (*generator, error) {
	g := newGenerator(f, m.merge, m.gvks)
	for _, p := range m.paths {
		for _, op := range p.ops {
			for _, t := range op.types() {
				if _, err := g.define(t); err != nil {
					return nil, fmt.Errorf("openapi: describing %v for %s: %w", t, op.id, err)
				}
			}
		}
	}
	return g, nil
}

// types returns the Go types of an operation's request and response bodies.
func (op *operation) types() []reflect.Type {
	var ts []reflect.Type
	if op.body != nil {
		ts = append(ts, op.body)
	}
	for _, r := range op.responses {
		if r.typ != nil {
			ts = append(ts, r.typ)
		}
	}
	return ts
}

func (op *operation) extensions() spec.Extensions {
	ext := spec.Extensions{}
	if op.action != "" {
		ext[extAction] = op.action
	}
	if op.gvk != nil {
		ext[extGVK] = gvkMap(*op.gvk)
	}
	return ext
}

var responseDescriptions = map[int]string{200: "OK", 201: "Created", 202: "Accepted", 401: "Unauthorized"}

const (
	securityName = "BearerToken"
	securityDesc = "Bearer Token authentication"
)
