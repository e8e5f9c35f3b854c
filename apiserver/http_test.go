package apiserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
)

// do sends a raw request and returns the status, headers and body.
func do(t *testing.T, method, url, contentType, accept, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(data)
}

func statusOf(t *testing.T, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	assert.Equal(t, "Status", st.Kind)
	return st
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"containers":[{"name":"c","image":"img:1"%s}]}}`

func TestHardening(t *testing.T) {
	ts := newTestServer(t)
	podsURL := ts.http.URL + "/api/v1/namespaces/default/pods"
	tests := []struct {
		name        string
		method, url string
		ctype, body string
		wantCode    int
		wantReason  metav1.StatusReason
		wantMessage string
	}{
		{"malformed json", "POST", podsURL, "application/json", `{"apiVersion":`, 400, metav1.StatusReasonBadRequest, ""},
		{"oversized body", "POST", podsURL, "application/json", `{"x":"` + strings.Repeat("a", 3*1024*1024+10) + `"}`, 413, metav1.StatusReasonRequestEntityTooLarge, "limit is 3145728"},
		{"unknown field strict", "POST", podsURL + "?fieldValidation=Strict", "application/json",
			strings.Replace(podJSON, "%s", "s1", 1)[:0] + `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"s1"},"spec":{"bogus":1,"containers":[{"name":"c","image":"img:1"}]}}`,
			400, metav1.StatusReasonBadRequest, `unknown field "spec.bogus"`},
		{"bad fieldValidation", "POST", podsURL + "?fieldValidation=Loud", "application/json", `{}`, 400, metav1.StatusReasonBadRequest, "fieldValidation"},
		{"wrong kind", "POST", podsURL, "application/json", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, "kind"},
		{"unsupported media", "POST", podsURL, "text/plain", `x`, 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"unknown resource", "GET", ts.http.URL + "/api/v1/widgets", "", "", 404, metav1.StatusReasonNotFound, ""},
		{"cluster resource with namespace", "GET", ts.http.URL + "/api/v1/namespaces/default/nodes", "", "", 404, metav1.StatusReasonNotFound, ""},
		{"namespace mismatch", "POST", podsURL, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, 400, metav1.StatusReasonBadRequest, "namespace"},
		{"invalid pod", "POST", podsURL, "application/json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[]}}`, 422, metav1.StatusReasonInvalid, "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := do(t, tt.method, tt.url, tt.ctype, "", tt.body)
			require.Equal(t, tt.wantCode, code, body)
			st := statusOf(t, body)
			assert.Equal(t, tt.wantReason, st.Reason)
			assert.Contains(t, st.Message, tt.wantMessage)
		})
	}
}

func TestUnknownFieldWarns(t *testing.T) {
	ts := newTestServer(t)
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"bogus":true}`
	code, hdr, resp := do(t, "POST", ts.http.URL+"/api/v1/namespaces/default/configmaps", "application/json", "", body)
	require.Equal(t, 201, code, resp)
	assert.Contains(t, hdr.Get("Warning"), `unknown field \"bogus\"`)
}

func TestPanicIsRecovered(t *testing.T) {
	panicky := admissionFuncs{admit: func(ctx context.Context, a *admission.Attributes) error { panic("boom") }}
	ts := newTestServer(t, func(c *apiserver.Config) { c.Admission = panicky })
	code, _, body := do(t, "POST", ts.http.URL+"/api/v1/namespaces/default/configmaps", "application/json", "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}}`)
	require.Equal(t, 500, code, body)
	st := statusOf(t, body)
	assert.Equal(t, metav1.StatusReasonInternalError, st.Reason)
	// The server keeps serving.
	code, _, _ = do(t, "GET", ts.http.URL+"/api/v1/namespaces/default/configmaps", "", "", "")
	assert.Equal(t, 200, code)
}

func TestTooManyRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocking := admissionFuncs{admit: func(ctx context.Context, a *admission.Attributes) error {
		once.Do(func() { close(entered) })
		<-release
		return nil
	}}
	ts := newTestServer(t, func(c *apiserver.Config) {
		c.Admission = blocking
		c.MaxMutatingRequestsInFlight = 1
	})
	done := make(chan int)
	go func() {
		code, _, _ := do(t, "POST", ts.http.URL+"/api/v1/namespaces/default/configmaps", "application/json", "",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)
		done <- code
	}()
	<-entered
	code, hdr, body := do(t, "POST", ts.http.URL+"/api/v1/namespaces/default/configmaps", "application/json", "",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`)
	close(release)
	require.Equal(t, 429, code, body)
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	assert.Equal(t, 201, <-done)
}

type admissionFuncs struct {
	admit func(ctx context.Context, a *admission.Attributes) error
}

func (f admissionFuncs) Admit(ctx context.Context, a *admission.Attributes) error {
	return f.admit(ctx, a)
}
func (f admissionFuncs) Validate(context.Context, *admission.Attributes) error { return nil }

func TestDiscoveryAndTables(t *testing.T) {
	ts := newTestServer(t)
	groups, resources, err := ts.client.Discovery().ServerGroupsAndResources()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, g := range []string{"", "apps", "batch", "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io"} {
		assert.True(t, names[g], "group %q served", g)
	}
	short := map[string]string{}
	for _, list := range resources {
		for _, r := range list.APIResources {
			for _, s := range r.ShortNames {
				short[s] = r.Name
			}
		}
	}
	for s, r := range map[string]string{"po": "pods", "no": "nodes", "svc": "services", "deploy": "deployments", "rs": "replicasets",
		"ns": "namespaces", "cm": "configmaps", "ep": "endpoints", "sa": "serviceaccounts", "ev": "events"} {
		assert.Equal(t, r, short[s], "short name %s", s)
	}

	_, err = ts.client.CoreV1().Pods("default").Create(context.Background(), testPod("t"), metav1.CreateOptions{})
	require.NoError(t, err)
	code, hdr, body := do(t, "GET", ts.http.URL+"/api/v1/namespaces/default/pods", "",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "")
	require.Equal(t, 200, code, body)
	assert.Contains(t, hdr.Get("Content-Type"), "as=Table")
	var table metav1.Table
	require.NoError(t, json.Unmarshal([]byte(body), &table))
	assert.Equal(t, "Table", table.Kind)
	require.Len(t, table.Rows, 1)
	assert.Equal(t, "t", table.Rows[0].Cells[0])
	assert.Contains(t, string(table.Rows[0].Object.Raw), `"kind":"PartialObjectMetadata"`)

	for _, p := range []string{"/version", "/healthz", "/livez", "/readyz", "/metrics", "/api", "/apis"} {
		code, _, body := do(t, "GET", ts.http.URL+p, "", "", "")
		assert.Equal(t, 200, code, "%s: %s", p, body)
	}
	_, _, metrics := do(t, "GET", ts.http.URL+"/metrics", "", "", "")
	assert.Contains(t, metrics, "apiserver_request_total")
	assert.Contains(t, metrics, "apiserver_request_duration_seconds")
}
