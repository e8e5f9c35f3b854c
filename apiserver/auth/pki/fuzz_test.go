package pki_test

import (
	"testing"

	"github.com/podkit/podkit/apiserver/auth/pki"
)

// FuzzParsePEM: certificate and key files come from operators (flags) and
// from disk; no input may panic the parsers.
func FuzzParsePEM(f *testing.F) {
	ca, err := pki.NewCA("fuzz", nil)
	if err != nil {
		f.Fatal(err)
	}
	kp, err := ca.Issue(pki.CertSpec{CommonName: "u", Organization: []string{"g"}, Client: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(kp.CertPEM)
	f.Add(kp.KeyPEM)
	f.Add(append(append([]byte{}, kp.CertPEM...), kp.KeyPEM...))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN EC PRIVATE KEY-----\n\n-----END EC PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if certs, err := pki.ParseCertsPEM(data); err == nil && len(certs) == 0 {
			t.Fatal("no error and no certificate")
		}
		if k, err := pki.ParsePrivateKeyPEM(data); err == nil && k == nil {
			t.Fatal("no error and no key")
		}
		_, _ = pki.ParsePublicKeysPEM(data)
	})
}
