package server_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/pki"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/kubelet/server"
)

// securedKubelet is a kubelet server over TLS that delegates
// authentication (client certificates of the cluster CA, bearer tokens via
// TokenReview) and authorization (SubjectAccessReview) to an in-process
// API server, as podkit.Node runs it.
type securedKubelet struct {
	url  string
	pki  *pki.Cluster
	node *pki.NodeCerts
}

func newSecuredKubelet(t *testing.T, authorizer func(kubernetes.Interface) auth.Authorizer) *securedKubelet {
	t.Helper()
	cl, err := pki.EnsureCluster(t.TempDir(), pki.ClusterOptions{})
	require.NoError(t, err)
	node, err := cl.EnsureNode("n1")
	require.NoError(t, err)
	tf, err := authn.ParseTokenFile(strings.NewReader("viewer-token,viewer,1,ops\n"))
	require.NoError(t, err)
	st := memory.New()
	api, err := apiserver.New(apiserver.Config{Store: st, Logger: slog.New(slog.DiscardHandler),
		Authenticator: authn.Bearer(tf), TokenReviewer: authn.TokenWithAuthenticatedGroup(tf)})
	require.NoError(t, err)
	require.NoError(t, api.Bootstrap(t.Context()))
	client, err := kubernetes.NewForConfig(inproc.RESTConfigAs(api.Handler(), inproc.NodeIdentity("n1")))
	require.NoError(t, err)

	logFile := filepath.Join(t.TempDir(), "0.log")
	require.NoError(t, os.WriteFile(logFile, []byte("2024-03-01T12:00:00Z stdout F hello from web\n"), 0o600))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	closed := make(chan struct{})
	close(closed)
	srv := server.New(server.Config{
		Pods: func() []*corev1.Pod { return []*corev1.Pod{pod} },
		Logs: server.LogSourceFunc(func(context.Context, string, string, string, bool) (string, <-chan struct{}, error) {
			return logFile, closed, nil
		}),
		Authenticator: server.DelegatedAuthenticator(client, cl.CA.Pool()),
		Authorizer:    authorizer(client),
		NodeName:      "n1",
		Logger:        slog.New(slog.DiscardHandler),
	})
	serving, err := node.Serving.TLSCertificate()
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(srv)
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequestClientCert}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return &securedKubelet{url: hs.URL, pki: cl, node: node}
}

// get requests path with an optional client certificate and bearer token.
func (k *securedKubelet) get(t *testing.T, path string, cert *pki.KeyPair, token string) (int, string) {
	t.Helper()
	cfg := &tls.Config{RootCAs: k.pki.CA.Pool()}
	if cert != nil {
		c, err := cert.TLSCertificate()
		require.NoError(t, err)
		cfg.Certificates = []tls.Certificate{c}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, k.url+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestKubeletServerRequiresAuthentication(t *testing.T) {
	k := newSecuredKubelet(t, func(c kubernetes.Interface) auth.Authorizer { return server.DelegatedAuthorizer(c) })
	rogueCA, err := pki.NewCA("rogue", nil)
	require.NoError(t, err)
	rogue, err := rogueCA.Issue(pki.CertSpec{CommonName: pki.KubeletClientUser, Organization: []string{pki.MastersGroup}, Client: true})
	require.NoError(t, err)
	const logs = "/containerLogs/default/web/app"
	tests := []struct {
		name  string
		cert  *pki.KeyPair
		token string
		code  int
		body  string
	}{
		{"no credentials", nil, "", http.StatusUnauthorized, "Unauthorized"},
		{"certificate of another CA", rogue, "", http.StatusUnauthorized, "Unauthorized"},
		{"unknown token", nil, "forged", http.StatusUnauthorized, "Unauthorized"},
		{"API server's kubelet-client certificate", k.pki.KubeletClient, "", http.StatusOK, "hello from web\n"},
		{"token the API server vouches for", nil, "viewer-token", http.StatusOK, "hello from web\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := k.get(t, logs, tc.cert, tc.token)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.body, body)
		})
	}
	code, _ := k.get(t, "/pods", nil, "")
	assert.Equal(t, http.StatusUnauthorized, code, "every endpoint")
}

func TestKubeletServerRequiresAuthorization(t *testing.T) {
	var asked []auth.Attributes
	k := newSecuredKubelet(t, func(kubernetes.Interface) auth.Authorizer {
		return auth.AuthorizerFunc(func(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
			asked = append(asked, a)
			if a.User.GetName() == pki.KubeletClientUser {
				return auth.DecisionAllow, "", nil
			}
			return auth.DecisionNoOpinion, "", nil
		})
	})
	code, body := k.get(t, "/containerLogs/default/web/app", nil, "viewer-token")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "Forbidden (user=viewer, verb=get, resource=nodes, subresource=proxy)", body)
	require.Len(t, asked, 1)
	assert.Equal(t, auth.Attributes{User: asked[0].User, Verb: "get", ResourceRequest: true, APIVersion: "v1",
		Resource: "nodes", Subresource: "proxy", Name: "n1"}, asked[0])
	code, _ = k.get(t, "/containerLogs/default/web/app", k.pki.KubeletClient, "")
	assert.Equal(t, http.StatusOK, code)
}

func TestRequestAttributes(t *testing.T) {
	u := &auth.DefaultUser{Name: "u"}
	for path, sub := range map[string]string{"/containerLogs/a/b/c": "proxy", "/pods": "proxy", "/healthz": "proxy",
		"/metrics": "metrics", "/metrics/cadvisor": "metrics", "/stats/summary": "stats", "/logs/": "log", "/spec/": "spec"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		assert.Equal(t, sub, server.RequestAttributes(u, r, "n").Subresource, path)
	}
	r := httptest.NewRequest(http.MethodPost, "/exec/a/b/c", nil)
	assert.Equal(t, "create", server.RequestAttributes(u, r, "n").Verb)
}
