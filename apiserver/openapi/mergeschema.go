package openapi

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/applyconfigurations"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// Kubernetes declares list and map semantics with comment markers
// (+listType, +listMapKey, +mapType, +structType) that reflection cannot
// see. The same markers are compiled into the structured-merge-diff schema
// that server-side apply uses, and client-go ships that schema for its apply
// configurations, so it is the source of the x-kubernetes-list-type,
// x-kubernetes-list-map-keys and x-kubernetes-map-type extensions here.

// semantics of one struct field, as the OpenAPI extensions spell them.
type semantics struct {
	listType string   // atomic, set, map
	listKeys []string // for listType map
	mapType  string   // atomic
}

type mergeInfo struct {
	s *smdschema.Schema
}

// field returns the semantics of field name of the definition def.
func (m *mergeInfo) field(def, name string) semantics {
	if m == nil || m.s == nil {
		return semantics{}
	}
	td, ok := m.s.FindNamedType(def)
	if !ok || td.Map == nil {
		return semantics{}
	}
	for _, f := range td.Map.Fields {
		if f.Name != name {
			continue
		}
		atom, ok := m.resolve(f.Type)
		if !ok {
			return semantics{}
		}
		switch {
		case atom.List != nil:
			return listSemantics(atom.List)
		case atom.Map != nil && atom.Map.ElementRelationship == smdschema.Atomic:
			return semantics{mapType: "atomic"}
		}
		return semantics{}
	}
	return semantics{}
}

// structAtomic reports whether the definition def is a struct that is
// replaced as a whole (+structType=atomic).
func (m *mergeInfo) structAtomic(def string) bool {
	if m == nil || m.s == nil {
		return false
	}
	td, ok := m.s.FindNamedType(def)
	return ok && td.Map != nil && len(td.Map.Fields) > 0 && td.Map.ElementRelationship == smdschema.Atomic
}

func (m *mergeInfo) resolve(tr smdschema.TypeRef) (smdschema.Atom, bool) {
	atom := tr.Inlined
	if tr.NamedType != nil {
		td, ok := m.s.FindNamedType(*tr.NamedType)
		if !ok {
			return smdschema.Atom{}, false
		}
		atom = td.Atom
	}
	if tr.ElementRelationship == nil {
		return atom, true
	}
	// A field-level marker overrides the referenced type's relationship.
	switch {
	case atom.List != nil:
		l := *atom.List
		l.ElementRelationship = *tr.ElementRelationship
		atom.List = &l
	case atom.Map != nil:
		mp := &smdschema.Map{ElementType: atom.Map.ElementType, ElementRelationship: *tr.ElementRelationship}
		atom.Map = mp
	}
	return atom, true
}

func listSemantics(l *smdschema.List) semantics {
	switch l.ElementRelationship {
	case smdschema.Associative:
		if len(l.Keys) == 0 {
			return semantics{listType: "set"}
		}
		return semantics{listType: "map", listKeys: append([]string(nil), l.Keys...)}
	case smdschema.Atomic, "":
		return semantics{listType: "atomic"}
	}
	return semantics{}
}

// clientGoMerge returns the structured-merge-diff schema compiled into
// client-go. client-go parses it on first use and keeps it for the process,
// so later calls are cheap.
func clientGoMerge() (*smdschema.Schema, error) {
	s := runtime.NewScheme()
	s.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.Namespace{})
	ns := &corev1.Namespace{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	tv, err := applyconfigurations.NewTypeConverter(s).ObjectToTyped(ns)
	if err != nil {
		return nil, fmt.Errorf("openapi: loading client-go's merge schema: %w", err)
	}
	return tv.Schema(), nil
}
