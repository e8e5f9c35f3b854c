package app

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Credentials are what a kubeconfig's user presents and trusts.
type Credentials struct {
	// CA (PEM) verifies the server; empty trusts the system roots.
	CA []byte
	// ClientCert and ClientKey (PEM) are a client certificate.
	ClientCert, ClientKey []byte
	// Token is a bearer token.
	Token string
}

// WriteKubeconfigFor writes a kubeconfig for server with one cluster,
// user and context named clusterName, embedding creds, mode 0600.
func WriteKubeconfigFor(path, server, clusterName string, creds Credentials) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: creds.CA}
	cfg.AuthInfos[clusterName] = &clientcmdapi.AuthInfo{ClientCertificateData: creds.ClientCert,
		ClientKeyData: creds.ClientKey, Token: creds.Token}
	cfg.Contexts[clusterName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: clusterName, Namespace: "default"}
	cfg.CurrentContext = clusterName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}
