package podkit

import (
	"crypto/tls"
	"net"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/kubelet/server"
)

// serverListener is the kubelet server's listener: TLS with the node's
// serving certificate when it has one. Client certificates are requested,
// not required: the authenticator verifies them (and bearer tokens).
func (n *Node) serverListener() net.Listener {
	if n.cfg.ServingCert == nil {
		return n.lis
	}
	return tls.NewListener(n.lis, &tls.Config{
		Certificates: []tls.Certificate{*n.cfg.ServingCert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
	})
}

// serverAuthenticator and serverAuthorizer delegate to the API server
// when the node serves TLS.
func (n *Node) serverAuthenticator() auth.Authenticator {
	if n.cfg.ServingCert == nil {
		return nil
	}
	return server.DelegatedAuthenticator(n.cfg.Client, n.cfg.ClientCA)
}

func (n *Node) serverAuthorizer() auth.Authorizer {
	if n.cfg.ServingCert == nil {
		return nil
	}
	return server.DelegatedAuthorizer(n.cfg.Client)
}
