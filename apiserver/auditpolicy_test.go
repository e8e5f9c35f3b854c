package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func TestAuditPolicyMatching(t *testing.T) {
	p, err := ParseAuditPolicy([]byte(`
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets"]
    resourceNames: ["db"]
- level: Request
  userGroups: ["dev"]
  namespaces: ["team"]
- level: Metadata
  resources:
  - group: ""
    resources: ["pods/log", "*/status"]
- level: Request
  resources:
  - group: "apps"
`))
	require.NoError(t, err)
	proxy := &auth.DefaultUser{Name: "system:kube-proxy"}
	dev := &auth.DefaultUser{Name: "ann", Groups: []string{"dev"}}
	for name, tc := range map[string]struct {
		a    AuditAttributes
		want AuditLevel
	}{
		"proxy watch":        {AuditAttributes{User: proxy, Verb: "watch", ResourceRequest: true, Resource: "services"}, AuditNone},
		"proxy list":         {AuditAttributes{User: proxy, Verb: "list", ResourceRequest: true, Resource: "pods"}, AuditNone},
		"healthz":            {AuditAttributes{Verb: "get", Path: "/healthz/ready"}, AuditNone},
		"version":            {AuditAttributes{Verb: "get", Path: "/version"}, AuditNone},
		"named secret":       {AuditAttributes{Verb: "get", ResourceRequest: true, Resource: "secrets", Name: "db"}, AuditRequestResponse},
		"other secret":       {AuditAttributes{Verb: "get", ResourceRequest: true, Resource: "secrets", Name: "x"}, AuditNone},
		"dev in team":        {AuditAttributes{User: dev, Verb: "create", ResourceRequest: true, Resource: "configmaps", Namespace: "team"}, AuditRequest},
		"dev elsewhere":      {AuditAttributes{User: dev, Verb: "create", ResourceRequest: true, Resource: "configmaps", Namespace: "x"}, AuditNone},
		"pod log":            {AuditAttributes{Verb: "get", ResourceRequest: true, Resource: "pods", Subresource: "log"}, AuditMetadata},
		"any status":         {AuditAttributes{Verb: "update", ResourceRequest: true, Resource: "nodes", Subresource: "status"}, AuditMetadata},
		"pod itself":         {AuditAttributes{Verb: "get", ResourceRequest: true, Resource: "pods"}, AuditNone},
		"whole group":        {AuditAttributes{Verb: "get", ResourceRequest: true, APIGroup: "apps", Resource: "deployments"}, AuditRequest},
		"non-resource other": {AuditAttributes{Verb: "get", Path: "/metrics"}, AuditNone},
	} {
		assert.Equal(t, tc.want, p.Level(&tc.a), name)
	}

	for name, doc := range map[string]string{
		"wrong kind":   "apiVersion: v1\nkind: ConfigMap\n",
		"bad level":    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n",
		"mixed":        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/x]\n  namespaces: [a]\n",
		"unknown":      "apiVersion: audit.k8s.io/v1\nkind: Policy\nrulez: []\n",
		"not yaml at…": "{",
	} {
		_, err := ParseAuditPolicy([]byte(doc))
		assert.Error(t, err, name)
	}
}

func TestAuditRecordsUserAndPanics(t *testing.T) {
	st := memory.New()
	defer st.Close()
	var sink bytes.Buffer
	s, err := New(Config{Store: st, Logger: slog.New(slog.DiscardHandler), Audit: &Audit{Sink: &sink}})
	require.NoError(t, err)
	h := s.withAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("panic") != "" {
			panic("boom")
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	user := &auth.DefaultUser{Name: "alice", UID: "u1", Groups: []string{"dev", auth.GroupAuthenticated}}
	req := httptest.NewRequest(http.MethodDelete, "/apis/apps/v1/namespaces/team/deployments/web", nil)
	req = req.WithContext(auth.WithUser(context.Background(), user))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.NotEmpty(t, rec.Header().Get("Audit-Id"))

	var ev map[string]any
	require.NoError(t, json.Unmarshal(sink.Bytes(), &ev))
	assert.Equal(t, "delete", ev["verb"])
	assert.Equal(t, map[string]any{"username": "alice", "uid": "u1", "groups": []any{"dev", "system:authenticated"}}, ev["user"])
	assert.Equal(t, map[string]any{"resource": "deployments", "namespace": "team", "name": "web", "apiGroup": "apps", "apiVersion": "v1"}, ev["objectRef"])
	assert.Equal(t, float64(403), ev["responseStatus"].(map[string]any)["code"])
	assert.Equal(t, rec.Header().Get("Audit-Id"), ev["auditID"])

	sink.Reset()
	assert.Panics(t, func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/pods?panic=1", nil))
	})
	require.NoError(t, json.Unmarshal(sink.Bytes(), &ev))
	assert.Equal(t, "list", ev["verb"])
	assert.Equal(t, float64(500), ev["responseStatus"].(map[string]any)["code"], "a panic is recorded as the 500 the client gets")
}
