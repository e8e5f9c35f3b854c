package apiserver

import (
	"encoding/json"
	"net/http"
	"runtime"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// DefaultVersion is what /version reports: the Kubernetes API level of the
// k8s.io/api types podkit serves, marked as podkit.
func DefaultVersion() *version.Info {
	return &version.Info{
		Major:      "1",
		Minor:      "33",
		GitVersion: "v1.33.0+podkit",
		GitCommit:  "podkit",
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
	}
}

func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, s.cfg.Version)
}

// serveCoreVersions serves /api.
func (s *Server) serveCoreVersions(w http.ResponseWriter, r *http.Request) {
	v := &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
		},
	}
	s.writeJSON(w, http.StatusOK, v)
}

// apiGroups returns the non-core groups in discovery order.
func (s *Server) apiGroups() []metav1.APIGroup {
	var groups []metav1.APIGroup
	index := map[string]int{}
	for _, gv := range s.groups {
		if gv.Group == "" {
			continue
		}
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if i, ok := index[gv.Group]; ok {
			groups[i].Versions = append(groups[i].Versions, gvd)
			continue
		}
		index[gv.Group] = len(groups)
		groups = append(groups, metav1.APIGroup{
			TypeMeta:         metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:             gv.Group,
			Versions:         []metav1.GroupVersionForDiscovery{gvd},
			PreferredVersion: gvd,
		})
	}
	return groups
}

// serveGroups serves /apis.
func (s *Server) serveGroups(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   s.apiGroups(),
	})
}

// serveGroup serves /apis/{group}.
func (s *Server) serveGroup(w http.ResponseWriter, r *http.Request, group string) {
	for _, g := range s.apiGroups() {
		if g.Name == group {
			s.writeJSON(w, http.StatusOK, &g)
			return
		}
	}
	s.writeError(w, r, notFoundPath(r))
}

// serveResourceList serves /api/v1 and /apis/{group}/{version}.
func (s *Server) serveResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	byName, ok := s.resources[gv]
	if !ok {
		s.writeError(w, r, notFoundPath(r))
		return
	}
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		res := byName[name]
		verbs := res.Verbs
		if verbs == nil {
			verbs = verbsAll
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:         res.Resource,
			SingularName: res.Singular,
			Namespaced:   res.Namespaced,
			Kind:         res.Kind,
			Verbs:        verbs,
			ShortNames:   res.ShortNames,
			Categories:   res.Categories,
		})
		for _, sub := range res.Subresources {
			ar := metav1.APIResource{Name: res.Resource + "/" + sub, Namespaced: res.Namespaced, Kind: res.Kind, Verbs: verbsStatus}
			switch sub {
			case "scale":
				ar.Group, ar.Version, ar.Kind = "autoscaling", "v1", "Scale"
			case "binding":
				ar.Kind, ar.Verbs = "Binding", verbsCreate
			case "finalize":
				ar.Verbs = []string{"update"}
			case "log":
				ar.Verbs = []string{"get"}
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	s.writeJSON(w, http.StatusOK, list)
}

// writeJSON writes a discovery-style document as plain JSON.
func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

func notFoundPath(r *http.Request) error {
	return newStatusError(http.StatusNotFound, metav1.StatusReasonNotFound,
		"the server could not find the requested resource", strings.TrimSpace(r.URL.Path))
}
