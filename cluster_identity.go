package podkit

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/internal/inproc"
	"github.com/podkit/podkit/internal/kubeclient"
)

// componentClient is an in-process client of the API server acting as u:
// the scheduler and the controllers run with their own identities, so
// authorization treats them as it treats kube-scheduler and
// kube-controller-manager.
func (c *Cluster) componentClient(u auth.User) (*rest.Config, kubernetes.Interface, error) {
	rc := kubeclient.Protobuf(inproc.RESTConfigAs(c.api.Server.Handler(), u))
	cl, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("podkit: client for %s: %w", u.GetName(), err)
	}
	return rc, cl, nil
}

// nodeIdentity gives a node its kubelet's identity: an in-process client
// acting as system:node:<name> (group system:nodes) and, unless the
// cluster is insecure, the kubelet server's certificate from the cluster
// PKI and the CA its callers' certificates must chain to.
func (c *Cluster) nodeIdentity(nc *NodeConfig) error {
	_, cl, err := c.componentClient(inproc.NodeIdentity(nc.Name))
	if err != nil {
		return err
	}
	nc.Client = cl
	if c.api.PKI == nil {
		return nil
	}
	certs, err := c.api.PKI.EnsureNode(nc.Name)
	if err != nil {
		return fmt.Errorf("podkit: node %s certificates: %w", nc.Name, err)
	}
	cert, err := certs.Serving.TLSCertificate()
	if err != nil {
		return fmt.Errorf("podkit: node %s serving certificate: %w", nc.Name, err)
	}
	nc.ServingCert, nc.ClientCA = &cert, c.api.PKI.CA.Pool()
	return nil
}
