package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"
)

// Validity of what the package issues, and how long before expiry a
// certificate is renewed.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
	RenewBefore  = 30 * 24 * time.Hour
)

// ErrNotPEM: the data holds no PEM block of the expected type.
var ErrNotPEM = errors.New("no PEM data of the expected type")

// CA is a certificate authority: its certificate and signing key.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	now     func() time.Time
}

// KeyPair is an issued certificate and its private key.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// CertSpec describes a certificate to issue.
type CertSpec struct {
	// CommonName is the user name of a client certificate.
	CommonName string
	// Organization lists a client certificate's groups.
	Organization []string
	// DNSNames and IPs are a serving certificate's subject alternative
	// names.
	DNSNames []string
	IPs      []net.IP
	// Client and Server select the extended key usages.
	Client, Server bool
	// Validity defaults to CertValidity.
	Validity time.Duration
}

// TLSCertificate returns kp for a tls.Config.
func (kp *KeyPair) TLSCertificate() (tls.Certificate, error) {
	return tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
}

// Pool returns a pool holding only the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// NewCA creates a self-signed CA valid for CAValidity; now defaults to
// time.Now.
func NewCA(commonName string, now func() time.Time) (*CA, error) {
	if now == nil {
		now = time.Now
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	start := now().Add(-time.Hour) // tolerate clocks slightly behind
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             start,
		NotAfter:              start.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: self-signing the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parsing the new CA: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der), now: now}, nil
}

// Issue creates a new key and a certificate for spec signed by the CA.
func (ca *CA) Issue(spec CertSpec) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: key for %q: %w", spec.CommonName, err)
	}
	return ca.sign(spec, key)
}

func (ca *CA) sign(spec CertSpec, key crypto.Signer) (*KeyPair, error) {
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	validity := spec.Validity
	if validity <= 0 {
		validity = CertValidity
	}
	start := ca.clock()().Add(-time.Hour)
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:      start,
		NotAfter:       start.Add(validity),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		DNSNames:       spec.DNSNames,
		IPAddresses:    spec.IPs,
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: signing %q: %w", spec.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parsing %q: %w", spec.CommonName, err)
	}
	keyPEM, err := EncodeKey(key)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

func (ca *CA) clock() func() time.Time {
	if ca.now == nil {
		return time.Now
	}
	return ca.now
}

// Covers reports whether cert is signed by the CA, valid for at least
// RenewBefore more, and carries what spec asks for (subject, usages, and
// every name and address).
func (ca *CA) Covers(cert *x509.Certificate, spec CertSpec) bool {
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), CurrentTime: ca.clock()(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return false
	}
	if ca.clock()().Add(RenewBefore).After(cert.NotAfter) {
		return false
	}
	if cert.Subject.CommonName != spec.CommonName || !slices.Equal(cert.Subject.Organization, spec.Organization) {
		return false
	}
	if spec.Client != slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageClientAuth) ||
		spec.Server != slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return false
	}
	for _, n := range spec.DNSNames {
		if !slices.Contains(cert.DNSNames, n) {
			return false
		}
	}
	for _, ip := range spec.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func keyID(pub *ecdsa.PublicKey) []byte {
	b, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(b)
	return sum[:20]
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// EncodeKey encodes a private key as PKCS#8 PEM.
func EncodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// EncodePublicKey encodes a public key as PKIX PEM ("PUBLIC KEY").
func EncodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("pki: encoding public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParseCertsPEM parses every CERTIFICATE block of data; it fails when
// there is none or one is malformed.
func ParseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("pki: parsing certificate: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pki: certificate: %w", ErrNotPEM)
	}
	return out, nil
}

// ParsePrivateKeyPEM parses the first private key of data: PKCS#8, SEC 1
// ("EC PRIVATE KEY") or PKCS#1 ("RSA PRIVATE KEY").
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var key any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pki: parsing %s: %w", b.Type, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("pki: %T is not a signing key", key)
		}
		return s, nil
	}
	return nil, fmt.Errorf("pki: private key: %w", ErrNotPEM)
}

// ParsePublicKeysPEM parses every public key of data: PUBLIC KEY blocks,
// and the public halves of private keys and certificates (what
// --service-account-key-file accepts).
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var out []crypto.PublicKey
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch b.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("pki: parsing public key: %w", err)
			}
			out = append(out, k)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("pki: parsing certificate: %w", err)
			}
			out = append(out, c.PublicKey)
		case "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY":
			k, err := ParsePrivateKeyPEM(pem.EncodeToMemory(b))
			if err != nil {
				return nil, err
			}
			out = append(out, k.Public())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pki: public key: %w", ErrNotPEM)
	}
	return out, nil
}

// LoadKeyPair reads a certificate (the first of the file) and its key.
func LoadKeyPair(certPath, keyPath string) (*KeyPair, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	certs, err := ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	key, err := ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) {
		return nil, fmt.Errorf("pki: %s does not hold the key of %s", keyPath, certPath)
	}
	return &KeyPair{Cert: certs[0], Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, err1 := x509.MarshalPKIXPublicKey(a)
	eb, err2 := x509.MarshalPKIXPublicKey(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}
