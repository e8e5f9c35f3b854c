package image

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
)

// Keyring holds registry credentials keyed like a Docker config file and
// matches them to images the way the kubelet does: the key's host (each
// label may be a glob like *.example.com) and port must equal the image's,
// and the key's path must prefix the image's repository. All matches are
// returned, most specific first; the puller tries them in turn.
type Keyring struct {
	entries []keyringEntry
}

var _ authn.Keychain = (*Keyring)(nil)

type keyringEntry struct {
	key  string
	host string // without port
	port string
	path string
	auth authn.AuthConfig
}

// dockerConfigEntry is one credential of a Docker config file.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	Email         string `json:"email,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
}

// NewKeyring returns an empty keyring.
func NewKeyring() *Keyring { return &Keyring{} }

// AddDockerConfigJSON adds the credentials of a config.json /
// .dockerconfigjson document ({"auths": {...}}).
func (k *Keyring) AddDockerConfigJSON(data []byte) error {
	var doc struct {
		Auths map[string]dockerConfigEntry `json:"auths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("decoding docker config: %w: %w", err, ErrInvalidConfig)
	}
	return k.addAll(doc.Auths)
}

// AddDockerCfg adds the credentials of a legacy .dockercfg document
// (the credentials map itself).
func (k *Keyring) AddDockerCfg(data []byte) error {
	var doc map[string]dockerConfigEntry
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("decoding dockercfg: %w: %w", err, ErrInvalidConfig)
	}
	return k.addAll(doc)
}

// AddSecret adds an image pull secret of type kubernetes.io/dockerconfigjson
// or kubernetes.io/dockercfg; other secrets are ignored, as the kubelet does.
func (k *Keyring) AddSecret(s *corev1.Secret) error {
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		if err := k.AddDockerConfigJSON(s.Data[corev1.DockerConfigJsonKey]); err != nil {
			return fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	case corev1.SecretTypeDockercfg:
		if err := k.AddDockerCfg(s.Data[corev1.DockerConfigKey]); err != nil {
			return fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return nil
}

// KeyringFromSecrets builds a keyring from a pod's image pull secrets.
// Secrets that do not decode are skipped and reported in the error, like
// the kubelet logs and skips them; the keyring holds the rest.
func KeyringFromSecrets(secrets []corev1.Secret) (*Keyring, error) {
	k := NewKeyring()
	var errs []error
	for i := range secrets {
		if err := k.AddSecret(&secrets[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return k, errors.Join(errs...)
}

// LoadKeyringFile reads a node credentials file (Docker config.json
// format, like the kubelet's /var/lib/kubelet/config.json). A missing file
// gives an empty keyring.
func LoadKeyringFile(path string) (*Keyring, error) {
	k := NewKeyring()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading credentials %s: %w", path, err)
	}
	if err := k.AddDockerConfigJSON(b); err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	return k, nil
}

// Merge returns a keyring with k's entries followed by others'.
func (k *Keyring) Merge(others ...*Keyring) *Keyring {
	out := &Keyring{entries: append([]keyringEntry(nil), k.entries...)}
	for _, o := range others {
		if o != nil {
			out.entries = append(out.entries, o.entries...)
		}
	}
	return out
}

func (k *Keyring) addAll(m map[string]dockerConfigEntry) error {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		e := m[key]
		auth := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken}
		if e.Auth != "" && auth.Username == "" {
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return fmt.Errorf("credentials for %q: auth is not base64: %w", key, ErrInvalidConfig)
			}
			user, pass, ok := strings.Cut(string(dec), ":")
			if !ok {
				return fmt.Errorf("credentials for %q: auth is not user:password: %w", key, ErrInvalidConfig)
			}
			auth.Username, auth.Password = user, pass
		}
		host, port, path, err := parseKey(key)
		if err != nil {
			return err
		}
		k.entries = append(k.entries, keyringEntry{key: key, host: host, port: port, path: path, auth: auth})
	}
	return nil
}

// parseKey splits a credentials key ("https://index.docker.io/v1/",
// "registry:5000/team", "*.example.com") into host, port and path.
func parseKey(key string) (host, port, path string, err error) {
	s := key
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", "", "", fmt.Errorf("credentials key %q is not a registry: %w", key, ErrInvalidConfig)
	}
	host, port = u.Hostname(), u.Port()
	path = strings.Trim(u.Path, "/")
	switch host {
	case "index.docker.io", "registry-1.docker.io", DefaultDomain:
		host = DefaultDomain
		if path == "v1" || path == "v2" {
			path = ""
		}
	}
	return host, port, path, nil
}

func (e *keyringEntry) matches(domain, repo string) bool {
	host, port := domain, ""
	if h, p, ok := strings.Cut(domain, ":"); ok && !strings.HasPrefix(domain, "[") {
		host, port = h, p
	}
	if port != e.port {
		return false
	}
	gl, tl := strings.Split(e.host, "."), strings.Split(host, ".")
	if len(gl) != len(tl) {
		return false
	}
	for i := range gl {
		if ok, _ := filepath.Match(gl[i], tl[i]); !ok {
			return false
		}
	}
	return e.path == "" || repo == e.path || strings.HasPrefix(repo, e.path+"/")
}

// Lookup returns the credentials matching the normalised image reference,
// most specific key first.
func (k *Keyring) Lookup(ref Reference) []authn.AuthConfig {
	var matched []keyringEntry
	for _, e := range k.entries {
		if e.matches(ref.Domain, ref.Path) {
			matched = append(matched, e)
		}
	}
	// Longer (more specific) keys first, as the kubelet sorts them.
	sort.SliceStable(matched, func(i, j int) bool { return len(matched[i].key) > len(matched[j].key) })
	out := make([]authn.AuthConfig, len(matched))
	for i, e := range matched {
		out[i] = e.auth
	}
	return out
}

// Resolve implements authn.Keychain with the first match, or anonymous.
func (k *Keyring) Resolve(res authn.Resource) (authn.Authenticator, error) {
	domain := res.RegistryStr()
	if domain == "index.docker.io" {
		domain = DefaultDomain
	}
	repo := ""
	if r, ok := res.(interface{ RepositoryStr() string }); ok {
		repo = r.RepositoryStr()
	}
	auths := k.Lookup(Reference{Domain: domain, Path: repo})
	if len(auths) == 0 {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(auths[0]), nil
}

// Len returns the number of credentials.
func (k *Keyring) Len() int { return len(k.entries) }
