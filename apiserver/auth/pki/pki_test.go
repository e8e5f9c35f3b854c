package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/auth/pki"
)

func TestEnsureClusterCreatesAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	c, err := pki.EnsureCluster(dir, pki.ClusterOptions{Hosts: []string{"192.0.2.10", "api.example"}})
	require.NoError(t, err)

	// Serving certificate: the names clients reach the API server at.
	s := c.Serving.Cert
	assert.Contains(t, s.DNSNames, "localhost")
	assert.Contains(t, s.DNSNames, "kubernetes.default.svc.cluster.local")
	assert.Contains(t, s.DNSNames, "api.example")
	if h, err := os.Hostname(); err == nil {
		assert.Contains(t, s.DNSNames, h)
	}
	for _, ip := range []string{"127.0.0.1", "10.96.0.1", "192.0.2.10"} {
		assert.True(t, containsIP(s.IPAddresses, ip), "SAN %s", ip)
	}
	_, err = s.Verify(x509.VerifyOptions{Roots: c.CA.Pool(), DNSName: "localhost", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)

	// Admin: kubernetes-admin in system:masters, a client certificate.
	assert.Equal(t, "kubernetes-admin", c.Admin.Cert.Subject.CommonName)
	assert.Equal(t, []string{"system:masters"}, c.Admin.Cert.Subject.Organization)
	_, err = c.Admin.Cert.Verify(x509.VerifyOptions{Roots: c.CA.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err)
	require.NotNil(t, c.ServiceAccountKey)

	// Every file 0600, the directory 0700.
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		fi, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}

	// Restart: the same certificates and keys.
	again, err := pki.EnsureCluster(dir, pki.ClusterOptions{Hosts: []string{"192.0.2.10", "api.example"}})
	require.NoError(t, err)
	assert.Equal(t, c.CA.Cert.SerialNumber, again.CA.Cert.SerialNumber)
	assert.Equal(t, c.Serving.Cert.SerialNumber, again.Serving.Cert.SerialNumber)
	assert.Equal(t, c.Admin.CertPEM, again.Admin.CertPEM)
	assert.Equal(t, c.ServiceAccountKey.Public(), again.ServiceAccountKey.Public())

	// A new advertise address: the serving certificate is reissued (same
	// key, same CA), the rest stays.
	moved, err := pki.EnsureCluster(dir, pki.ClusterOptions{Hosts: []string{"192.0.2.11"}})
	require.NoError(t, err)
	assert.NotEqual(t, c.Serving.Cert.SerialNumber, moved.Serving.Cert.SerialNumber)
	assert.True(t, containsIP(moved.Serving.Cert.IPAddresses, "192.0.2.11"))
	assert.Equal(t, c.Serving.Key.Public(), moved.Serving.Key.Public())
	assert.Equal(t, c.Admin.Cert.SerialNumber, moved.Admin.Cert.SerialNumber)
}

func TestEnsureNode(t *testing.T) {
	c, err := pki.EnsureCluster(t.TempDir(), pki.ClusterOptions{})
	require.NoError(t, err)
	n, err := c.EnsureNode("n1", "192.0.2.20")
	require.NoError(t, err)
	assert.Equal(t, "system:node:n1", n.Client.Cert.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, n.Client.Cert.Subject.Organization)
	assert.Contains(t, n.Serving.Cert.DNSNames, "n1")
	assert.True(t, containsIP(n.Serving.Cert.IPAddresses, "127.0.0.1"))
	assert.True(t, containsIP(n.Serving.Cert.IPAddresses, "192.0.2.20"))
	again, err := c.EnsureNode("n1")
	require.NoError(t, err)
	assert.Equal(t, n.Client.Cert.SerialNumber, again.Client.Cert.SerialNumber)
	_, err = c.EnsureNode("../x")
	assert.Error(t, err)

	// The pair works for TLS: the kubelet serves with it, the API server
	// verifies it against the CA.
	cert, err := n.Serving.TLSCertificate()
	require.NoError(t, err)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	require.NoError(t, err)
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err == nil {
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: c.CA.Pool()})
	require.NoError(t, err)
	conn.Close()
}

func TestExpiringCertificateIsRenewed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	clock := func() time.Time { return now }
	c, err := pki.EnsureCluster(dir, pki.ClusterOptions{Now: clock})
	require.NoError(t, err)
	now = now.Add(pki.CertValidity - pki.RenewBefore/2)
	later, err := pki.EnsureCluster(dir, pki.ClusterOptions{Now: clock})
	require.NoError(t, err)
	assert.NotEqual(t, c.Admin.Cert.SerialNumber, later.Admin.Cert.SerialNumber)
	assert.Equal(t, c.CA.Cert.SerialNumber, later.CA.Cert.SerialNumber)
}

func TestHalfACAIsAnError(t *testing.T) {
	dir := t.TempDir()
	_, err := pki.EnsureCluster(dir, pki.ClusterOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(dir, pki.CAKeyFile)))
	_, err = pki.EnsureCluster(dir, pki.ClusterOptions{})
	assert.ErrorContains(t, err, "only one of")
}

func TestForeignCertificateIsReplaced(t *testing.T) {
	dir := t.TempDir()
	other, err := pki.NewCA("other", nil)
	require.NoError(t, err)
	kp, err := other.Issue(pki.CertSpec{CommonName: pki.AdminUser, Organization: []string{pki.MastersGroup}, Client: true})
	require.NoError(t, err)
	require.NoError(t, pki.WriteFile(filepath.Join(dir, pki.AdminCertFile), kp.CertPEM))
	require.NoError(t, pki.WriteFile(filepath.Join(dir, pki.AdminKeyFile), kp.KeyPEM))
	c, err := pki.EnsureCluster(dir, pki.ClusterOptions{})
	require.NoError(t, err)
	assert.True(t, c.CA.Covers(c.Admin.Cert, pki.CertSpec{CommonName: pki.AdminUser, Organization: []string{pki.MastersGroup}, Client: true}))
}

func TestParsePEM(t *testing.T) {
	ca, err := pki.NewCA("t", nil)
	require.NoError(t, err)
	kp, err := ca.Issue(pki.CertSpec{CommonName: "u", Client: true})
	require.NoError(t, err)
	certs, err := pki.ParseCertsPEM(append(append([]byte("junk\n"), kp.CertPEM...), ca.CertPEM...))
	require.NoError(t, err)
	assert.Len(t, certs, 2)
	_, err = pki.ParseCertsPEM([]byte("not pem"))
	assert.ErrorIs(t, err, pki.ErrNotPEM)
	key, err := pki.ParsePrivateKeyPEM(kp.KeyPEM)
	require.NoError(t, err)
	assert.Equal(t, kp.Key.Public(), key.Public())
	pubs, err := pki.ParsePublicKeysPEM(append(kp.KeyPEM, ca.CertPEM...))
	require.NoError(t, err)
	assert.Len(t, pubs, 2)
}

func containsIP(ips []net.IP, s string) bool {
	want := net.ParseIP(s)
	for _, ip := range ips {
		if ip.Equal(want) {
			return true
		}
	}
	return false
}
