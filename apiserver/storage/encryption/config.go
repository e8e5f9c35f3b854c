package encryption

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// The EncryptionConfiguration file format (apiserver.config.k8s.io/v1),
// the subset podkit reads.
type fileConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Resources  []resourceRule `json:"resources"`
}

type resourceRule struct {
	Resources []string         `json:"resources"`
	Providers []providerConfig `json:"providers"`
}

type providerConfig struct {
	AESGCM   *keysConfig `json:"aesgcm,omitempty"`
	AESCBC   *keysConfig `json:"aescbc,omitempty"`
	Identity *struct{}   `json:"identity,omitempty"`
}

type keysConfig struct {
	Keys []keyConfig `json:"keys"`
}

type keyConfig struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// Config is a loaded EncryptionConfiguration: for each resource, the
// providers in order. It is safe for concurrent use.
type Config struct {
	rules []rule
	// all holds every encrypting provider once, for reading values whose
	// resource is not known (Codec).
	all []provider
}

// rule is one resources entry: what it matches and its providers.
type rule struct {
	match     []matcher
	providers []provider
}

// matcher matches a group-resource; "*" stands for any group or resource.
type matcher struct{ group, resource string }

func (m matcher) matches(gr schema.GroupResource) bool {
	return (m.group == "*" || m.group == gr.Group) && (m.resource == "*" || m.resource == gr.Resource)
}

// LoadConfig reads an EncryptionConfiguration file.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses an EncryptionConfiguration (YAML or JSON).
func ParseConfig(data []byte) (*Config, error) {
	var f fileConfig
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if f.Kind != "EncryptionConfiguration" || (f.APIVersion != "apiserver.config.k8s.io/v1" && f.APIVersion != "apiserver.config.k8s.io/v1beta1") {
		return nil, fmt.Errorf("want kind EncryptionConfiguration of apiserver.config.k8s.io/v1, got %s %s", f.Kind, f.APIVersion)
	}
	c := &Config{}
	seen := map[string]bool{}
	for i, r := range f.Resources {
		if len(r.Resources) == 0 || len(r.Providers) == 0 {
			return nil, fmt.Errorf("resources[%d]: needs resources and providers", i)
		}
		var ru rule
		for _, name := range r.Resources {
			m, err := parseResource(name)
			if err != nil {
				return nil, fmt.Errorf("resources[%d]: %w", i, err)
			}
			ru.match = append(ru.match, m)
		}
		for j, pc := range r.Providers {
			ps, err := buildProviders(pc)
			if err != nil {
				return nil, fmt.Errorf("resources[%d].providers[%d]: %w", i, j, err)
			}
			ru.providers = append(ru.providers, ps...)
			for _, p := range ps {
				if p.prefix() != "" && !seen[p.prefix()] {
					seen[p.prefix()] = true
					c.all = append(c.all, p)
				}
			}
		}
		c.rules = append(c.rules, ru)
	}
	return c, nil
}

// parseResource reads "secrets", "deployments.apps", "*.apps", "*.*".
func parseResource(name string) (matcher, error) {
	res, group, _ := strings.Cut(name, ".")
	switch {
	case res == "":
		return matcher{}, fmt.Errorf("resource %q: empty", name)
	case res == "*" && group == "":
		// "*." (every core resource) cannot be told from a group's
		// resources by key alone in podkit's layout.
		return matcher{}, fmt.Errorf("resource %q: list core resources by name", name)
	}
	return matcher{group: group, resource: res}, nil
}

// buildProviders turns one providers entry into its providers: one per key
// for the AES providers, first key first.
func buildProviders(pc providerConfig) ([]provider, error) {
	n := 0
	var out []provider
	if pc.Identity != nil {
		n++
		out = append(out, identity{})
	}
	for _, kind := range []struct {
		name string
		keys *keysConfig
		make func(name string, key []byte) (provider, error)
	}{{"aesgcm", pc.AESGCM, newAESGCM}, {"aescbc", pc.AESCBC, newAESCBC}} {
		if kind.keys == nil {
			continue
		}
		n++
		if len(kind.keys.Keys) == 0 {
			return nil, fmt.Errorf("%s: no keys", kind.name)
		}
		names := map[string]bool{}
		for _, k := range kind.keys.Keys {
			if k.Name == "" || strings.Contains(k.Name, ":") {
				return nil, fmt.Errorf("%s: key name %q: must be non-empty without ':'", kind.name, k.Name)
			}
			if names[k.Name] {
				return nil, fmt.Errorf("%s: duplicate key name %q", kind.name, k.Name)
			}
			names[k.Name] = true
			secret, err := base64.StdEncoding.DecodeString(k.Secret)
			if err != nil {
				return nil, fmt.Errorf("%s: key %q: secret is not base64: %w", kind.name, k.Name, err)
			}
			p, err := kind.make(k.Name, secret)
			if err != nil {
				return nil, fmt.Errorf("%s: key %q: %w", kind.name, k.Name, err)
			}
			out = append(out, p)
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("exactly one of aesgcm, aescbc, identity per provider entry, got %d", n)
	}
	return out, nil
}

// providersFor returns the providers of the first rule matching gr, nil
// when no rule does (the resource is stored as is).
func (c *Config) providersFor(gr schema.GroupResource) []provider {
	for _, r := range c.rules {
		for _, m := range r.match {
			if m.matches(gr) {
				return r.providers
			}
		}
	}
	return nil
}

// Encrypts reports whether new writes of gr are encrypted.
func (c *Config) Encrypts(gr schema.GroupResource) bool {
	ps := c.providersFor(gr)
	return len(ps) > 0 && ps[0].prefix() != ""
}
