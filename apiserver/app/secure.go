package app

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/auth/authn"
	"github.com/podkit/podkit/apiserver/auth/pki"
	"github.com/podkit/podkit/apiserver/auth/satoken"
	"github.com/podkit/podkit/apiserver/storage"
)

// DefaultServiceAccountIssuer is --service-account-issuer's default, the
// API server's in-cluster URL (what kubeadm sets).
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// SecureOptions are the TLS and authentication settings, named as
// kube-apiserver's flags. The zero value (with DataDir set) is the secure
// default: HTTPS with certificates from the cluster PKI in
// <data-dir>/pki, client certificates of the cluster CA, service-account
// tokens, anonymous requests refused.
type SecureOptions struct {
	// Insecure serves plain HTTP and authenticates nobody: every request
	// is system:admin (apiserver.Config.Authenticator nil). For embedding
	// and tests only (--insecure-serving).
	Insecure bool
	// PKIDir holds the generated PKI (default <data-dir>/pki).
	PKIDir string
	// TLSCertFile and TLSPrivateKeyFile replace the generated serving
	// certificate (--tls-cert-file, --tls-private-key-file).
	TLSCertFile, TLSPrivateKeyFile string
	// ClientCAFile verifies client certificates (--client-ca-file;
	// default the cluster CA).
	ClientCAFile string
	// TokenAuthFile is the static token CSV (--token-auth-file).
	TokenAuthFile string
	// The authenticating proxy (--requestheader-*); off without
	// RequestHeaderClientCAFile.
	RequestHeaderClientCAFile       string
	RequestHeaderAllowedNames       []string
	RequestHeaderUsernameHeaders    []string
	RequestHeaderGroupHeaders       []string
	RequestHeaderExtraHeadersPrefix []string
	// ServiceAccountKeyFiles verify tokens (--service-account-key-file);
	// the signing key's public half is always included.
	ServiceAccountKeyFiles []string
	// ServiceAccountSigningKeyFile signs TokenRequest tokens
	// (--service-account-signing-key-file; default the generated sa.key).
	ServiceAccountSigningKeyFile string
	// ServiceAccountIssuer is the tokens' "iss" (--service-account-issuer;
	// default DefaultServiceAccountIssuer); APIAudiences their default
	// audiences (--api-audiences; default the issuer).
	ServiceAccountIssuer string
	APIAudiences         []string
	// AnonymousAuth lets unauthenticated requests in as system:anonymous
	// (--anonymous-auth; default false).
	AnonymousAuth bool
	// AuthenticationTokenWebhookConfigFile is a kubeconfig naming a
	// TokenReview webhook (--authentication-token-webhook-config-file);
	// AuthenticationTokenWebhookCacheTTL caches its answers.
	AuthenticationTokenWebhookConfigFile string
	AuthenticationTokenWebhookCacheTTL   time.Duration
	// KubeletClientCertificate and KubeletClientKey authenticate the API
	// server to kubelets (--kubelet-client-certificate,
	// --kubelet-client-key; default the generated
	// apiserver-kubelet-client pair); KubeletCertificateAuthority verifies
	// kubelets' serving certificates (default the cluster CA).
	KubeletClientCertificate, KubeletClientKey, KubeletCertificateAuthority string
}

// AddSecureFlags registers o's flags on fs with kube-apiserver's names.
func AddSecureFlags(fs *pflag.FlagSet, o *SecureOptions) {
	fs.BoolVar(&o.Insecure, "insecure-serving", o.Insecure, "serve plain HTTP without authentication: every request is a cluster admin (embedding and tests only)")
	fs.StringVar(&o.PKIDir, "cert-dir", o.PKIDir, "directory of the generated cluster PKI: CA, serving, admin and kubelet certificates, service-account key (default <data-dir>/pki)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "serving certificate (default: generated from the cluster CA)")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "key of --tls-cert-file")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "CA bundle verifying client certificates; CN is the user, O the groups (default: the cluster CA)")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, "static bearer tokens, CSV: token,user,uid,\"group1,group2\"")
	fs.StringVar(&o.RequestHeaderClientCAFile, "requestheader-client-ca-file", o.RequestHeaderClientCAFile, "CA bundle verifying the authenticating proxy's client certificate; enables the request-header authenticator")
	fs.StringSliceVar(&o.RequestHeaderAllowedNames, "requestheader-allowed-names", o.RequestHeaderAllowedNames, "common names the proxy's certificate may have (empty: any signed by the request-header CA)")
	fs.StringSliceVar(&o.RequestHeaderUsernameHeaders, "requestheader-username-headers", o.RequestHeaderUsernameHeaders, "headers naming the user (default X-Remote-User)")
	fs.StringSliceVar(&o.RequestHeaderGroupHeaders, "requestheader-group-headers", o.RequestHeaderGroupHeaders, "headers naming the groups (default X-Remote-Group)")
	fs.StringSliceVar(&o.RequestHeaderExtraHeadersPrefix, "requestheader-extra-headers-prefix", o.RequestHeaderExtraHeadersPrefix, "prefixes of headers carrying extra user information (default X-Remote-Extra-)")
	fs.StringSliceVar(&o.ServiceAccountKeyFiles, "service-account-key-file", o.ServiceAccountKeyFiles, "PEM files of public (or private) keys verifying service-account tokens")
	fs.StringVar(&o.ServiceAccountSigningKeyFile, "service-account-signing-key-file", o.ServiceAccountSigningKeyFile, "private key signing service-account tokens (default: generated sa.key in --cert-dir)")
	fs.StringVar(&o.ServiceAccountIssuer, "service-account-issuer", o.ServiceAccountIssuer, "the iss claim of service-account tokens (default "+DefaultServiceAccountIssuer+")")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "audiences of the API; tokens must name one (default: the issuer)")
	fs.BoolVar(&o.AnonymousAuth, "anonymous-auth", o.AnonymousAuth, "let requests without credentials in as system:anonymous")
	fs.StringVar(&o.AuthenticationTokenWebhookConfigFile, "authentication-token-webhook-config-file", o.AuthenticationTokenWebhookConfigFile, "kubeconfig of a TokenReview webhook authenticating bearer tokens")
	fs.DurationVar(&o.AuthenticationTokenWebhookCacheTTL, "authentication-token-webhook-cache-ttl", authn.DefaultWebhookCacheTTL, "how long the webhook's answers are cached")
	fs.StringVar(&o.KubeletClientCertificate, "kubelet-client-certificate", o.KubeletClientCertificate, "client certificate towards kubelets (default: generated)")
	fs.StringVar(&o.KubeletClientKey, "kubelet-client-key", o.KubeletClientKey, "key of --kubelet-client-certificate")
	fs.StringVar(&o.KubeletCertificateAuthority, "kubelet-certificate-authority", o.KubeletCertificateAuthority, "CA bundle verifying kubelets' serving certificates (default: the cluster CA)")
}

// security is what the secure options made: the PKI, the serving TLS
// configuration and the pieces of the server configuration.
type security struct {
	pki        *pki.Cluster
	tls        *tls.Config
	authn      auth.Authenticator
	tokens     auth.TokenAuthenticator
	issuer     *apiserver.ServiceAccountIssuer
	kubeletTLS *tls.Config
}

// newSecurity ensures the cluster PKI and builds the authentication chain
// over st; hosts are extra serving names (bind and advertise addresses).
func newSecurity(o SecureOptions, dataDir string, hosts []string, st storage.Store) (*security, error) {
	dir := o.PKIDir
	if dir == "" {
		if dataDir == "" {
			return nil, fmt.Errorf("a --data-dir or --cert-dir is required for the cluster PKI")
		}
		dir = filepath.Join(dataDir, "pki")
	}
	cl, err := pki.EnsureCluster(dir, pki.ClusterOptions{Hosts: hosts})
	if err != nil {
		return nil, err
	}
	sec := &security{pki: cl}
	serving := cl.Serving
	if o.TLSCertFile != "" || o.TLSPrivateKeyFile != "" {
		if serving, err = pki.LoadKeyPair(o.TLSCertFile, o.TLSPrivateKeyFile); err != nil {
			return nil, fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
		}
	}
	cert, err := serving.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	sec.tls = &tls.Config{
		Certificates: []tls.Certificate{cert},
		// Certificates are verified by the authenticators, against the
		// client CA or the request-header CA, not by the handshake.
		ClientAuth: tls.RequestClientCert,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}
	if err := sec.buildAuthn(o, st); err != nil {
		return nil, err
	}
	if sec.kubeletTLS, err = kubeletClientTLS(o, cl); err != nil {
		return nil, err
	}
	return sec, nil
}

func (sec *security) buildAuthn(o SecureOptions, st storage.Store) error {
	clientCA := sec.pki.CA.Pool()
	if o.ClientCAFile != "" {
		p, err := loadPool(o.ClientCAFile)
		if err != nil {
			return fmt.Errorf("--client-ca-file: %w", err)
		}
		clientCA = p
	}
	var chain []auth.Authenticator
	var rh *authn.RequestHeader
	if o.RequestHeaderClientCAFile != "" {
		p, err := loadPool(o.RequestHeaderClientCAFile)
		if err != nil {
			return fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		rh = &authn.RequestHeader{ClientCA: p, AllowedNames: o.RequestHeaderAllowedNames,
			UsernameHeaders: o.RequestHeaderUsernameHeaders, GroupHeaders: o.RequestHeaderGroupHeaders,
			ExtraHeaderPrefixes: o.RequestHeaderExtraHeadersPrefix}
		chain = append(chain, rh)
	}
	chain = append(chain, &authn.X509{Roots: clientCA})

	var tokens []auth.TokenAuthenticator
	if o.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(o.TokenAuthFile)
		if err != nil {
			return fmt.Errorf("--token-auth-file: %w", err)
		}
		tokens = append(tokens, tf)
	}
	signing := sec.pki.ServiceAccountKey
	if o.ServiceAccountSigningKeyFile != "" {
		data, err := os.ReadFile(o.ServiceAccountSigningKeyFile)
		if err != nil {
			return fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
		if signing, err = pki.ParsePrivateKeyPEM(data); err != nil {
			return fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
	}
	signer, err := satoken.NewSigner(signing)
	if err != nil {
		return fmt.Errorf("service-account signing key: %w", err)
	}
	keys := []crypto.PublicKey{signing.Public()}
	for _, f := range o.ServiceAccountKeyFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("--service-account-key-file: %w", err)
		}
		pubs, err := pki.ParsePublicKeysPEM(data)
		if err != nil {
			return fmt.Errorf("--service-account-key-file %s: %w", f, err)
		}
		keys = append(keys, pubs...)
	}
	issuer := o.ServiceAccountIssuer
	if issuer == "" {
		issuer = DefaultServiceAccountIssuer
	}
	sec.issuer = &apiserver.ServiceAccountIssuer{Signer: signer, Issuer: issuer, APIAudiences: o.APIAudiences}
	tokens = append(tokens, &authn.ServiceAccountTokens{Keys: keys, Issuers: []string{issuer},
		Audiences: sec.issuer.Audiences(), Objects: st})
	if o.AuthenticationTokenWebhookConfigFile != "" {
		wh, err := authn.NewWebhookTokenFromFile(o.AuthenticationTokenWebhookConfigFile, o.AuthenticationTokenWebhookCacheTTL)
		if err != nil {
			return fmt.Errorf("--authentication-token-webhook-config-file: %w", err)
		}
		tokens = append(tokens, wh)
	}
	sec.tokens = authn.TokenWithAuthenticatedGroup(authn.TokenUnion(tokens...))
	chain = append(chain, authn.Bearer(authn.TokenUnion(tokens...)))
	if o.AnonymousAuth {
		chain = append(chain, authn.Anonymous())
	}
	all := authn.WithAuthenticatedGroup(authn.Union(chain...))
	if rh == nil {
		sec.authn = all
		return nil
	}
	// Identity headers reach no later stage unless the proxy set them.
	sec.authn = auth.AuthenticatorFunc(func(r *http.Request) (*auth.Response, bool, error) {
		resp, ok, err := all.AuthenticateRequest(r)
		rh.StripHeaders(r.Header)
		return resp, ok, err
	})
	return nil
}

// kubeletClientTLS is how the API server reaches kubelets (pods/log).
func kubeletClientTLS(o SecureOptions, cl *pki.Cluster) (*tls.Config, error) {
	kp := cl.KubeletClient
	if o.KubeletClientCertificate != "" || o.KubeletClientKey != "" {
		var err error
		if kp, err = pki.LoadKeyPair(o.KubeletClientCertificate, o.KubeletClientKey); err != nil {
			return nil, fmt.Errorf("--kubelet-client-certificate/--kubelet-client-key: %w", err)
		}
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		return nil, fmt.Errorf("kubelet client certificate: %w", err)
	}
	roots := cl.CA.Pool()
	if o.KubeletCertificateAuthority != "" {
		if roots, err = loadPool(o.KubeletCertificateAuthority); err != nil {
			return nil, fmt.Errorf("--kubelet-certificate-authority: %w", err)
		}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS12}, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	certs, err := pki.ParseCertsPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p, nil
}

// servingHosts are the bind and advertise addresses when specific.
func servingHosts(opts Options) []string {
	var hosts []string
	for _, h := range []string{opts.BindAddress, opts.AdvertiseAddress} {
		if ip := net.ParseIP(h); h != "" && (ip == nil || !ip.IsUnspecified()) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}
