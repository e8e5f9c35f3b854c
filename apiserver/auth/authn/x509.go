package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"

	"github.com/podkit/podkit/apiserver/auth"
)

// X509 authenticates requests by their TLS client certificate: verified
// against Roots (--client-ca-file) for client authentication, the
// subject's CommonName is the user and its Organizations the groups, as in
// Kubernetes. A request without a certificate is not its business; a
// certificate that does not verify is an error.
type X509 struct {
	// Roots are the trusted CAs; required.
	Roots *x509.CertPool
}

// AuthenticateRequest implements auth.Authenticator.
func (a *X509) AuthenticateRequest(r *http.Request) (*auth.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	cert, err := verifyClient(r.TLS.PeerCertificates, a.Roots)
	if err != nil {
		return nil, false, err
	}
	if cert.Subject.CommonName == "" {
		return nil, false, fmt.Errorf("x509: client certificate has no common name")
	}
	return &auth.Response{User: &auth.DefaultUser{Name: cert.Subject.CommonName,
		Groups: slices.Clone(cert.Subject.Organization)}}, true, nil
}

// verifyClient verifies the leaf of chain (the others are intermediates)
// against roots for client authentication.
func verifyClient(chain []*x509.Certificate, roots *x509.CertPool) (*x509.Certificate, error) {
	if roots == nil {
		return nil, fmt.Errorf("x509: no client CA configured")
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return nil, fmt.Errorf("verifying certificate %s failed: %w", describe(chain[0]), err)
	}
	return chain[0], nil
}

func describe(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%s, CN=%q, issuer=%q", c.SerialNumber, c.Subject.CommonName, c.Issuer.CommonName)
}
