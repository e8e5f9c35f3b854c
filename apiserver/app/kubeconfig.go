package app

// WriteKubeconfig writes a kubeconfig for server (e.g. http://127.0.0.1:6443)
// with one cluster, user and context named clusterName, mode 0600.
func WriteKubeconfig(path, server, clusterName string) error {
	return WriteKubeconfigFor(path, server, clusterName, Credentials{})
}
