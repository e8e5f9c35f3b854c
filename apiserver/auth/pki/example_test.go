package pki_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/podkit/podkit/apiserver/auth/pki"
)

// EnsureCluster creates the cluster's PKI on the first start and reuses it
// afterwards; EnsureNode adds a kubelet's certificates.
func ExampleEnsureCluster() {
	dir, _ := os.MkdirTemp("", "pki-example-")
	defer os.RemoveAll(dir)
	c, err := pki.EnsureCluster(filepath.Join(dir, "pki"), pki.ClusterOptions{Hosts: []string{"192.0.2.1"}})
	if err != nil {
		panic(err)
	}
	node, err := c.EnsureNode("node-1")
	if err != nil {
		panic(err)
	}
	again, _ := pki.EnsureCluster(filepath.Join(dir, "pki"), pki.ClusterOptions{Hosts: []string{"192.0.2.1"}})
	fmt.Println(c.Admin.Cert.Subject.CommonName, c.Admin.Cert.Subject.Organization)
	fmt.Println(node.Client.Cert.Subject.CommonName, node.Client.Cert.Subject.Organization)
	fmt.Println("reused:", again.CA.Cert.Equal(c.CA.Cert))
	// Output:
	// kubernetes-admin [system:masters]
	// system:node:node-1 [system:nodes]
	// reused: true
}
