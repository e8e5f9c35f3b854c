package apiserver

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/podkit/podkit/apiserver/auth"
)

func TestRequestAttributes(t *testing.T) {
	u := &auth.DefaultUser{Name: "jane"}
	res := func(verb, group, version, ns, resource, sub, name string) auth.Attributes {
		return auth.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: group, APIVersion: version,
			Namespace: ns, Resource: resource, Subresource: sub, Name: name}
	}
	path := func(verb, p string) auth.Attributes { return auth.Attributes{User: u, Verb: verb, Path: p} }
	tests := []struct {
		method, url string
		want        auth.Attributes
	}{
		{"GET", "/api/v1/namespaces/default/pods", res("list", "", "v1", "default", "pods", "", "")},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", res("watch", "", "v1", "default", "pods", "", "")},
		{"GET", "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dweb", res("watch", "", "v1", "default", "pods", "", "web")},
		{"GET", "/api/v1/pods", res("list", "", "v1", "", "pods", "", "")},
		{"GET", "/api/v1/namespaces/default/pods/web", res("get", "", "v1", "default", "pods", "", "web")},
		{"HEAD", "/api/v1/namespaces/default/pods/web", res("get", "", "v1", "default", "pods", "", "web")},
		{"GET", "/api/v1/namespaces/default/pods/web/log", res("get", "", "v1", "default", "pods", "log", "web")},
		{"POST", "/api/v1/namespaces/default/pods", res("create", "", "v1", "default", "pods", "", "")},
		{"PUT", "/api/v1/namespaces/default/pods/web/status", res("update", "", "v1", "default", "pods", "status", "web")},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale", res("patch", "apps", "v1", "ns", "deployments", "scale", "d")},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", res("delete", "apps", "v1", "ns", "deployments", "", "d")},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", res("deletecollection", "apps", "v1", "ns", "deployments", "", "")},
		{"GET", "/api/v1/namespaces", res("list", "", "v1", "", "namespaces", "", "")},
		{"GET", "/api/v1/namespaces/kube-system", res("get", "", "v1", "", "namespaces", "", "kube-system")},
		{"PUT", "/api/v1/namespaces/doomed/finalize", res("update", "", "v1", "", "namespaces", "finalize", "doomed")},
		{"POST", "/api/v1/namespaces/default/serviceaccounts/sa/token", res("create", "", "v1", "default", "serviceaccounts", "token", "sa")},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", res("create", "authorization.k8s.io", "v1", "", "selfsubjectaccessreviews", "", "")},
		{"GET", "/api", path("get", "/api")},
		{"GET", "/api/v1", path("get", "/api/v1")},
		{"GET", "/apis/apps/v1", path("get", "/apis/apps/v1")},
		{"GET", "/apis/apps", path("get", "/apis/apps")},
		{"GET", "/version", path("get", "/version")},
		{"HEAD", "/healthz", path("get", "/healthz")},
		{"POST", "/healthz", path("post", "/healthz")},
		{"GET", "/openapi/v3/apis/apps/v1", path("get", "/openapi/v3/apis/apps/v1")},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.url, nil)
			assert.Equal(t, tt.want, requestAttributes(r, u))
		})
	}
}
