package authn_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/pki"
)

func newCA(t testing.TB, name string) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA(name, nil)
	require.NoError(t, err)
	return ca
}

func issue(t testing.TB, ca *pki.CA, spec pki.CertSpec) *x509.Certificate {
	t.Helper()
	kp, err := ca.Issue(spec)
	require.NoError(t, err)
	return kp.Cert
}

// withCert is a request as it arrives over TLS with a client certificate.
func withCert(certs ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	if len(certs) > 0 {
		r.TLS = &tls.ConnectionState{PeerCertificates: certs}
	}
	return r
}

func TestX509(t *testing.T) {
	ca, other := newCA(t, "cluster"), newCA(t, "other")
	a := &authn.X509{Roots: ca.Pool()}
	tests := []struct {
		name    string
		req     *http.Request
		ok      bool
		wantErr string
		user    string
		groups  []string
	}{
		{"client cert", withCert(issue(t, ca, pki.CertSpec{CommonName: "jane", Organization: []string{"dev", "ops"}, Client: true})),
			true, "", "jane", []string{"dev", "ops"}},
		{"no cert", withCert(), false, "", "", nil},
		{"wrong CA", withCert(issue(t, other, pki.CertSpec{CommonName: "jane", Client: true})), false, "unknown authority", "", nil},
		{"server-only cert", withCert(issue(t, ca, pki.CertSpec{CommonName: "jane", Server: true})), false, "incompatible key usage", "", nil},
		{"expired", withCert(issue(t, ca, pki.CertSpec{CommonName: "jane", Client: true, Validity: time.Minute})), false, "expired", "", nil},
		{"no common name", withCert(issue(t, ca, pki.CertSpec{Client: true})), false, "no common name", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := a.AuthenticateRequest(tc.req)
			assert.Equal(t, tc.ok, ok)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.ok {
				assert.Equal(t, tc.user, resp.User.GetName())
				assert.Equal(t, tc.groups, resp.User.GetGroups())
			}
		})
	}
}

func TestTokenFile(t *testing.T) {
	tf, err := authn.ParseTokenFile(strings.NewReader("s3cret,jane,u1,\"dev,ops\"\nother,bob,u2\n"))
	require.NoError(t, err)
	resp, ok, err := tf.AuthenticateToken(t.Context(), "s3cret")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, &auth.DefaultUser{Name: "jane", UID: "u1", Groups: []string{"dev", "ops"}}, resp.User)
	resp, ok, _ = tf.AuthenticateToken(t.Context(), "other")
	require.True(t, ok)
	assert.Empty(t, resp.User.GetGroups())
	for _, forged := range []string{"s3cre", "s3cret ", "S3CRET", ""} {
		_, ok, err := tf.AuthenticateToken(t.Context(), forged)
		assert.False(t, ok, forged)
		assert.NoError(t, err, forged)
	}
	for name, bad := range map[string]string{
		"two columns": "tok,user\n",
		"empty token": ",user,uid\n",
		"duplicate":   "t,a,1\nt,b,2\n",
		"bad quoting": "t,\"a,1\n",
	} {
		_, err := authn.ParseTokenFile(strings.NewReader(bad))
		assert.Error(t, err, name)
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header string
		token  string
		ok     bool
		err    bool
	}{
		{"Bearer abc", "abc", true, false},
		{"bearer  abc ", "abc", true, false},
		{"Bearer", "", false, false},
		{"Bearer ", "", false, false},
		{"Bearer a b", "", true, true},
		{"Basic dXNlcjpwYXNz", "", false, false},
		{"", "", false, false},
	}
	for _, tc := range tests {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Authorization", tc.header)
		}
		token, ok, err := authn.BearerToken(h)
		assert.Equal(t, tc.token, token, tc.header)
		assert.Equal(t, tc.ok, ok, tc.header)
		assert.Equal(t, tc.err, err != nil, tc.header)
	}
}

func TestRequestHeader(t *testing.T) {
	proxyCA, clientCA := newCA(t, "front-proxy"), newCA(t, "cluster")
	a := &authn.RequestHeader{ClientCA: proxyCA.Pool(), AllowedNames: []string{"front-proxy-client"}}
	proxy := issue(t, proxyCA, pki.CertSpec{CommonName: "front-proxy-client", Client: true})
	req := func(cert *x509.Certificate) *http.Request {
		r := withCert()
		if cert != nil {
			r = withCert(cert)
		}
		r.Header.Set("X-Remote-User", "jane")
		r.Header.Add("X-Remote-Group", "dev")
		r.Header.Add("X-Remote-Group", "ops")
		r.Header.Set("X-Remote-Extra-Scopes", "openid")
		r.Header.Set("X-Remote-Extra-Acme.com%2Fproject", "p1")
		return r
	}

	r := req(proxy)
	resp, ok, err := a.AuthenticateRequest(r)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "jane", resp.User.GetName())
	assert.Equal(t, []string{"dev", "ops"}, resp.User.GetGroups())
	assert.Equal(t, map[string][]string{"scopes": {"openid"}, "acme.com/project": {"p1"}}, resp.User.GetExtra())
	assert.Empty(t, r.Header.Get("X-Remote-User"), "identity headers are removed")
	assert.Empty(t, r.Header.Get("X-Remote-Extra-Scopes"))

	_, ok, err = a.AuthenticateRequest(req(nil))
	assert.False(t, ok, "headers without a proxy certificate mean nothing")
	assert.NoError(t, err)
	_, ok, err = a.AuthenticateRequest(req(issue(t, clientCA, pki.CertSpec{CommonName: "front-proxy-client", Client: true})))
	assert.False(t, ok, "a client certificate of another CA")
	assert.ErrorContains(t, err, "unknown authority")
	_, ok, err = a.AuthenticateRequest(req(issue(t, proxyCA, pki.CertSpec{CommonName: "someone-else", Client: true})))
	assert.False(t, ok)
	assert.ErrorContains(t, err, "is not allowed")
	_, ok, err = a.AuthenticateRequest(withCert(proxy))
	assert.False(t, ok, "no user header: not a proxied request")
	assert.NoError(t, err)
}

func TestUnionAndGroups(t *testing.T) {
	ca := newCA(t, "cluster")
	tf, err := authn.ParseTokenFile(strings.NewReader("tok,jane,u1,dev\n"))
	require.NoError(t, err)
	chain := authn.WithAuthenticatedGroup(authn.Union(&authn.X509{Roots: ca.Pool()}, authn.Bearer(tf)))

	r := withCert(issue(t, newCA(t, "other"), pki.CertSpec{CommonName: "mallory", Client: true}))
	r.Header.Set("Authorization", "Bearer tok")
	resp, ok, err := chain.AuthenticateRequest(r)
	require.NoError(t, err, "a later authenticator's success wins over an earlier error")
	require.True(t, ok)
	assert.Equal(t, "jane", resp.User.GetName())
	assert.Equal(t, []string{"dev", auth.GroupAuthenticated}, resp.User.GetGroups())

	r = withCert(issue(t, newCA(t, "other"), pki.CertSpec{CommonName: "mallory", Client: true}))
	r.Header.Set("Authorization", "Bearer nope")
	_, ok, err = chain.AuthenticateRequest(r)
	assert.False(t, ok)
	assert.ErrorContains(t, err, "unknown authority", "every failure is reported")

	_, ok, err = chain.AuthenticateRequest(withCert())
	assert.False(t, ok, "no credentials")
	assert.NoError(t, err)

	withAnon := authn.WithAuthenticatedGroup(authn.Union(authn.Bearer(tf), authn.Anonymous()))
	resp, ok, _ = withAnon.AuthenticateRequest(withCert())
	require.True(t, ok)
	assert.Equal(t, auth.UserAnonymous, resp.User.GetName())
	assert.Equal(t, []string{auth.GroupUnauthenticated}, resp.User.GetGroups())
}
