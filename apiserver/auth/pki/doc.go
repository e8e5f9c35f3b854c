// Package pki creates and keeps the cluster's certificates: the trust the
// "Authentication" step of the birth sequence rests on. On the API
// server's first start EnsureCluster makes a cluster CA, the API server's
// serving certificate, the admin client certificate written into the
// kubeconfig, the API server's client certificate for kubelets and the
// service-account signing key; EnsureNode adds a kubelet's client
// certificate (CN=system:node:<name>, O=system:nodes) and serving
// certificate. Everything lives in one directory (mode 0700, files 0600)
// and is reused on restart: a certificate is issued again only when it is
// missing, no longer signed by the CA, about to expire or no longer covers
// the names asked for, so kubeconfigs written earlier stay valid.
//
// Keys are ECDSA P-256: generating them takes microseconds (an RSA key
// takes a noticeable fraction of a second on a busy machine) and every
// client Kubernetes ships accepts them; the service-account key signs
// ES256 tokens, which kube-apiserver also accepts.
package pki
