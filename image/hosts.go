package image

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"sigs.k8s.io/yaml"
)

// RegistryConfig configures registries like k3s' registries.yaml:
//
//	mirrors:
//	  docker.io:
//	    endpoint: ["http://127.0.0.1:5000"]
//	  "*":
//	    endpoint: ["https://mirror.internal"]
//	configs:
//	  "127.0.0.1:5443":
//	    auth: {username: u, password: p}
//	    tls: {ca_file: /etc/ca.pem, insecure_skip_verify: false}
//
// Mirror endpoints are tried in order, then the registry itself (unless
// DisableDefault). An endpoint's scheme decides plain HTTP or HTTPS.
type RegistryConfig struct {
	Mirrors map[string]Mirror     `json:"mirrors,omitempty"`
	Configs map[string]HostConfig `json:"configs,omitempty"`
	// DisableDefault skips the registry itself when it has mirrors.
	DisableDefault bool `json:"disable_default_endpoint,omitempty"`
}

// Mirror lists the endpoints serving a registry's content.
type Mirror struct {
	Endpoints []string `json:"endpoint,omitempty"`
	// Rewrite maps a regular expression on the repository path to a
	// replacement, applied when pulling from a mirror.
	Rewrite map[string]string `json:"rewrite,omitempty"`
}

// HostConfig holds a host's credentials and TLS settings.
type HostConfig struct {
	Auth *HostAuth `json:"auth,omitempty"`
	TLS  *HostTLS  `json:"tls,omitempty"`
}

// HostAuth is a host's credentials.
type HostAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identity_token,omitempty"`
}

// HostTLS is a host's TLS settings.
type HostTLS struct {
	CAFile             string `json:"ca_file,omitempty"`
	CertFile           string `json:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

// LoadRegistryConfig reads a registries.yaml file; a missing file is an
// empty configuration.
func LoadRegistryConfig(path string) (*RegistryConfig, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &RegistryConfig{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading registry config: %w", err)
	}
	return ParseRegistryConfig(b)
}

// ParseRegistryConfig decodes and validates a registries.yaml document.
func ParseRegistryConfig(b []byte) (*RegistryConfig, error) {
	var c RegistryConfig
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("decoding registry config: %w: %w", err, ErrInvalidConfig)
	}
	return &c, c.Validate()
}

// Validate checks endpoints and rewrite expressions.
func (c *RegistryConfig) Validate() error {
	for reg, m := range c.Mirrors {
		for _, ep := range m.Endpoints {
			if _, err := parseEndpoint(ep); err != nil {
				return fmt.Errorf("mirror of %s: %w", reg, err)
			}
		}
		for re := range m.Rewrite {
			if _, err := regexp.Compile(re); err != nil {
				return fmt.Errorf("mirror of %s: rewrite %q: %w: %w", reg, re, err, ErrInvalidConfig)
			}
		}
	}
	return nil
}

// endpoint is one place to pull a repository from.
type endpoint struct {
	host   string // host[:port]
	scheme string // "https", "http", or "" (go-containerregistry decides)
	path   string // repository path at this endpoint
	mirror bool
}

func parseEndpoint(s string) (endpoint, error) {
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return endpoint{}, fmt.Errorf("endpoint %q must be http(s)://host[:port]: %w", s, ErrInvalidConfig)
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "v2" {
		return endpoint{}, fmt.Errorf("endpoint %q: paths are not supported: %w", s, ErrInvalidConfig)
	}
	return endpoint{host: u.Host, scheme: u.Scheme}, nil
}

// endpoints lists where to pull ref from, mirrors first.
func (c *RegistryConfig) endpoints(ref Reference) []endpoint {
	var out []endpoint
	m, ok := c.Mirrors[ref.Domain]
	if !ok {
		m, ok = c.Mirrors["*"]
	}
	if ok {
		path := ref.Path
		keys := make([]string, 0, len(m.Rewrite))
		for re := range m.Rewrite {
			keys = append(keys, re)
		}
		sort.Strings(keys)
		for _, re := range keys {
			rx := regexp.MustCompile(re)
			if rx.MatchString(path) {
				path = rx.ReplaceAllString(path, m.Rewrite[re])
				break
			}
		}
		for _, s := range m.Endpoints {
			ep, err := parseEndpoint(s)
			if err != nil {
				continue // rejected by Validate
			}
			if ep.host == ref.Domain {
				// The registry itself, given a scheme: not a mirror.
				ep.path, ep.mirror = ref.Path, false
			} else {
				ep.path, ep.mirror = path, true
			}
			out = append(out, ep)
		}
		if c.DisableDefault && len(out) > 0 {
			return out
		}
	}
	for _, ep := range out {
		if ep.host == ref.Domain {
			return out
		}
	}
	host := ref.Domain
	return append(out, endpoint{host: host, path: ref.Path})
}

// hostAuth returns the credentials configured for host, if any.
func (c *RegistryConfig) hostAuth(host string) (authn.AuthConfig, bool) {
	hc, ok := c.Configs[host]
	if !ok || hc.Auth == nil {
		return authn.AuthConfig{}, false
	}
	a := hc.Auth
	return authn.AuthConfig{Username: a.Username, Password: a.Password, Auth: a.Auth, IdentityToken: a.IdentityToken}, true
}

// transports builds and caches one HTTP transport per host.
type transports struct {
	base *http.Transport
	cfg  *RegistryConfig
	mu   sync.Mutex
	m    map[string]http.RoundTripper
}

func (t *transports) get(ep endpoint) (http.RoundTripper, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := ep.scheme + "://" + ep.host
	if rt, ok := t.m[key]; ok {
		return rt, nil
	}
	tr := t.base.Clone()
	if hc, ok := t.cfg.Configs[ep.host]; ok && hc.TLS != nil {
		tc, err := hc.TLS.config()
		if err != nil {
			return nil, fmt.Errorf("TLS settings of %s: %w", ep.host, err)
		}
		tr.TLSClientConfig = tc
	}
	var rt http.RoundTripper = tr
	if ep.scheme == "https" {
		// go-containerregistry talks plain HTTP to loopback and private
		// addresses; an explicit https endpoint must stay on TLS.
		rt = &forceScheme{host: ep.host, scheme: "https", next: tr}
	}
	if t.m == nil {
		t.m = map[string]http.RoundTripper{}
	}
	t.m[key] = rt
	return rt, nil
}

func (h *HostTLS) config() (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: h.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // opt-in per host
	if h.CAFile != "" {
		pem, err := os.ReadFile(h.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificates in %s: %w", h.CAFile, ErrInvalidConfig)
		}
		tc.RootCAs = pool
	}
	if h.CertFile != "" || h.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(h.CertFile, h.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

type forceScheme struct {
	host, scheme string
	next         http.RoundTripper
}

func (f *forceScheme) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == f.host && r.URL.Scheme != f.scheme {
		r = r.Clone(r.Context())
		r.URL.Scheme = f.scheme
	}
	return f.next.RoundTrip(r)
}
