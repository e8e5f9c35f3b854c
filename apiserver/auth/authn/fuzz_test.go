package authn_test

import (
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/pki"
)

func typesUID(s string) types.UID { return types.UID(s) }

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// FuzzAuthenticationHeaders: the Authorization and X-Remote-* headers come
// straight from the network. Parsing never panics, and without the proxy's
// certificate no header value authenticates anyone.
func FuzzAuthenticationHeaders(f *testing.F) {
	f.Add("Bearer abc", "jane", "dev", "X-Remote-Extra-Scopes")
	f.Add("bearer\t x y", "", "", "X-Remote-Extra-%zz")
	f.Add("Basic Zm9vOmJhcg==", "system:admin", "system:masters", "X-Remote-Extra-")
	tf, err := authn.ParseTokenFile(strings.NewReader("s3cret,jane,u1\n"))
	if err != nil {
		f.Fatal(err)
	}
	proxyCA, err := pki.NewCA("proxy", nil)
	if err != nil {
		f.Fatal(err)
	}
	rh := &authn.RequestHeader{ClientCA: proxyCA.Pool()}
	f.Fuzz(func(t *testing.T, authz, user, group, extraKey string) {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header["Authorization"] = []string{authz}
		r.Header["X-Remote-User"] = []string{user}
		r.Header["X-Remote-Group"] = []string{group}
		r.Header[extraKey] = []string{"v"}
		token, ok, err := authn.BearerToken(r.Header)
		if err == nil && ok && (token == "" || strings.ContainsAny(token, " \t\r\n")) {
			t.Fatalf("accepted bearer token %q", token)
		}
		if resp, ok, _ := authn.Bearer(tf).AuthenticateRequest(r); ok && token != "s3cret" {
			t.Fatalf("token %q authenticated as %v", token, resp.User)
		}
		if _, ok, _ := rh.AuthenticateRequest(r); ok {
			t.Fatal("request headers authenticated without a proxy certificate")
		}
	})
}

// FuzzClientCertificate: whatever certificate a client presents, parsing
// and verification never panic and never authenticate a certificate the
// cluster CA did not sign.
func FuzzClientCertificate(f *testing.F) {
	ca, err := pki.NewCA("cluster", nil)
	if err != nil {
		f.Fatal(err)
	}
	other, err := pki.NewCA("other", nil)
	if err != nil {
		f.Fatal(err)
	}
	kp, err := other.Issue(pki.CertSpec{CommonName: "mallory", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(kp.Cert.Raw)
	f.Add(ca.Cert.Raw)
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x00})
	a := &authn.X509{Roots: ca.Pool()}
	f.Fuzz(func(t *testing.T, der []byte) {
		certs, err := pki.ParseCertsPEM(pemCert(der))
		if err != nil {
			return
		}
		cert := certs[0]
		if cert.Equal(ca.Cert) {
			return // the CA itself: its holder has the CA's key anyway
		}
		if resp, ok, _ := a.AuthenticateRequest(withCert(cert)); ok {
			t.Fatalf("a fuzzed certificate authenticated as %v", resp.User)
		}
	})
}
