package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/auth/pki"
)

// kubeletTLSFlags are the kubelet's certificate flags, named as the
// kubelet names them, plus --cluster-pki-dir for kubelets on the API
// server's host.
type kubeletTLSFlags struct {
	pkiDir, certFile, keyFile, clientCAFile string
}

func (f *kubeletTLSFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.pkiDir, "cluster-pki-dir", "", "the API server's PKI directory (<apiserver data-dir>/pki) on this host: the kubelet issues itself "+
		"a client certificate (system:node:<node-name>) and a serving certificate from the cluster CA there and joins with them; "+
		"--kubeconfig then only names the server and its CA")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "the kubelet server's certificate (with --tls-private-key-file)")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "key of --tls-cert-file")
	fs.StringVar(&f.clientCAFile, "client-ca-file", "", "CA bundle verifying callers' client certificates (default: the kubeconfig's CA)")
}

// kubeletSecurity is what the flags set up: the API client's credentials,
// the server's certificate and the CA its callers chain to. serving nil
// means a plain-HTTP server without authentication (only against an
// insecure API server).
type kubeletSecurity struct {
	rc       *rest.Config
	serving  *tls.Certificate
	clientCA *x509.CertPool
}

func (f *kubeletTLSFlags) setup(rc *rest.Config, node, addr string) (*kubeletSecurity, error) {
	sec := &kubeletSecurity{rc: rc}
	host, _, _ := net.SplitHostPort(addr)
	if f.pkiDir != "" {
		cl, err := pki.OpenCA(f.pkiDir)
		if err != nil {
			return nil, fmt.Errorf("--cluster-pki-dir: %w", err)
		}
		certs, err := cl.EnsureNode(node, host)
		if err != nil {
			return nil, fmt.Errorf("--cluster-pki-dir: %w", err)
		}
		// The node's own identity replaces whatever user the kubeconfig had.
		anon := rest.AnonymousClientConfig(rc)
		anon.TLSClientConfig = rest.TLSClientConfig{ServerName: rc.TLSClientConfig.ServerName, CAData: cl.CA.CertPEM,
			CertData: certs.Client.CertPEM, KeyData: certs.Client.KeyPEM}
		sec.rc = anon
		cert, err := certs.Serving.TLSCertificate()
		if err != nil {
			return nil, err
		}
		sec.serving, sec.clientCA = &cert, cl.CA.Pool()
	} else if f.certFile != "" || f.keyFile != "" {
		kp, err := pki.LoadKeyPair(f.certFile, f.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
		}
		cert, err := kp.TLSCertificate()
		if err != nil {
			return nil, err
		}
		sec.serving = &cert
	} else if strings.HasPrefix(rc.Host, "https://") {
		return nil, errors.New("the kubelet server needs a certificate: --tls-cert-file and --tls-private-key-file, or --cluster-pki-dir")
	}
	if sec.serving == nil || sec.clientCA != nil {
		return sec, nil
	}
	caPEM := rc.TLSClientConfig.CAData
	if f.clientCAFile != "" || (len(caPEM) == 0 && rc.TLSClientConfig.CAFile != "") {
		path := f.clientCAFile
		if path == "" {
			path = rc.TLSClientConfig.CAFile
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		caPEM = data
	}
	if len(caPEM) == 0 {
		return nil, errors.New("no CA to verify callers' certificates: --client-ca-file")
	}
	certs, err := pki.ParseCertsPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	sec.clientCA = x509.NewCertPool()
	for _, c := range certs {
		sec.clientCA.AddCert(c)
	}
	return sec, nil
}
