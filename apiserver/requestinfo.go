package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what the URL and method say about a resource request.
type requestInfo struct {
	Verb         string // get list watch create update patch delete deletecollection
	GroupVersion schema.GroupVersion
	Resource     string
	Subresource  string
	Namespace    string
	Name         string
}

// namespaceSubresources are the subresources of the namespace object itself,
// which share the /namespaces/{name}/{x} shape with namespaced resources.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseResourcePath parses /api/v1/... and /apis/{g}/{v}/... resource paths.
// ok is false for anything that is not a resource request (discovery etc).
func parseResourcePath(method, path string, query map[string][]string) (info requestInfo, ok bool) {
	return parseResourceParts(method, splitPath(path), query)
}

// parseResourceParts is parseResourcePath of a path split by splitPath.
func parseResourceParts(method string, parts []string, query map[string][]string) (info requestInfo, ok bool) {
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		info.GroupVersion = schema.GroupVersion{Version: parts[1]}
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		info.GroupVersion = schema.GroupVersion{Group: parts[1], Version: parts[2]}
		parts = parts[3:]
	default:
		return info, false
	}
	if parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		} else {
			info.Resource, info.Name = "namespaces", parts[1]
			info.Namespace = ""
			if len(parts) > 2 {
				info.Subresource = parts[2]
			}
			parts = nil
		}
	}
	if parts != nil {
		info.Resource = parts[0]
		if len(parts) > 1 {
			info.Name = parts[1]
		}
		if len(parts) > 2 {
			info.Subresource = parts[2]
		}
		if len(parts) > 3 {
			return info, false
		}
	}
	info.Verb = verbFor(method, info.Name, query)
	return info, info.Verb != ""
}

func verbFor(method, name string, query map[string][]string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		if name != "" {
			return "get"
		}
		if w := first(query["watch"]); w == "1" || w == "true" {
			return "watch"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if name != "" {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}

func splitPath(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}
