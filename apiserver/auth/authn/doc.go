// Package authn holds the authenticators of step 2 of the birth sequence
// ("who is calling") and the chain that combines them, as kube-apiserver
// builds it: the request-header (authenticating proxy) and x509
// client-certificate authenticators look at the TLS connection; the static
// token file, service-account tokens and the webhook token authenticator
// look at the bearer token; anonymous, when enabled, comes last. The first
// authenticator that recognises the request wins; when none does the API
// server answers 401 Unauthorized.
//
// Every successful identity gets the group system:authenticated
// (WithAuthenticatedGroup), except system:anonymous, which gets
// system:unauthenticated. A credential an authenticator recognises but
// rejects (a certificate from the wrong CA, an expired or forged token) is
// an error rather than "no opinion"; the chain still asks the others and
// reports every error when none succeeds.
//
// Tokens are compared in constant time, certificates are verified against
// the configured pools only (never the system roots), and headers that
// carry identities (X-Remote-*) are honoured only from a client certificate
// signed by the request-header CA whose name is allowed — and removed from
// every request otherwise, so they never reach a later stage.
package authn
