// Package satoken signs and verifies service-account tokens: the JWTs the
// TokenRequest API (serviceaccounts/<name>/token) issues and the
// authentication step accepts as "system:serviceaccount:<ns>:<name>". In
// the birth sequence the kubelet asks for one while it sets up a pod's
// volumes (step 9) and projects it at
// /var/run/secrets/kubernetes.io/serviceaccount/token; the pod then uses it
// to call the API server.
//
// The claims are Kubernetes' own (iss, sub, aud, exp, nbf, iat, jti and the
// private "kubernetes.io" claim naming the namespace, service account and
// the pod or secret the token is bound to), so tokens are interchangeable
// with kube-apiserver's. Tokens are compact JWS, ES256 (the cluster key
// podkit generates) or RS256 (an operator's RSA key); the JOSE subset is
// implemented here because it is a few dozen lines and needs no
// dependency. Verify checks the signature and the time claims only; the
// authenticator checks issuer, audience and that the bound objects still
// exist.
package satoken
