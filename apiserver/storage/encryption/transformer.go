package encryption

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// encPrefix starts every encrypted value.
const encPrefix = "k8s:enc:"

// TransformToStorage encrypts data with the first provider of the rule
// matching key's resource (key is a storage key, /registry/...), and
// authenticates key with it. Resources without a rule are stored as is.
func (c *Config) TransformToStorage(_ context.Context, data []byte, key string) ([]byte, error) {
	ps := c.providersFor(ResourceOfKey(key))
	if len(ps) == 0 {
		return data, nil
	}
	out, err := ps[0].seal(data, []byte(key))
	if err != nil {
		return nil, fmt.Errorf("encrypting %q: %w", key, err)
	}
	return out, nil
}

// TransformFromStorage decrypts data with the provider of the rule matching
// key's resource that its prefix names. Data that is not encrypted is
// returned as is when the rule lists identity (or no rule matches);
// otherwise it fails with ErrDecrypt, as in Kubernetes.
func (c *Config) TransformFromStorage(_ context.Context, data []byte, key string) ([]byte, error) {
	ps := c.providersFor(ResourceOfKey(key))
	if len(ps) == 0 {
		if bytes.HasPrefix(data, []byte(encPrefix)) {
			// Encrypted under a rule since removed: try every key.
			return open(c.all, data, []byte(key))
		}
		return data, nil
	}
	return open(ps, data, []byte(key))
}

// Stale reports whether data, stored under key, is not in the form new
// writes take: encrypted with another key or provider than the first one,
// or not encrypted while it should be (or the reverse). The etcd store
// rewrites stale values on update.
func (c *Config) Stale(data []byte, key string) bool {
	ps := c.providersFor(ResourceOfKey(key))
	encrypted := bytes.HasPrefix(data, []byte(encPrefix))
	if len(ps) == 0 || ps[0].prefix() == "" {
		return encrypted
	}
	return !bytes.HasPrefix(data, []byte(ps[0].prefix()))
}

// open finds the provider whose prefix data carries and decrypts with it.
func open(ps []provider, data, authData []byte) ([]byte, error) {
	identityListed := false
	for _, p := range ps {
		pfx := p.prefix()
		if pfx == "" {
			identityListed = true
			continue
		}
		if bytes.HasPrefix(data, []byte(pfx)) {
			return p.open(data[len(pfx):], authData)
		}
	}
	if bytes.HasPrefix(data, []byte(encPrefix)) {
		head, _, _ := strings.Cut(string(data[len(encPrefix):min(len(data), 128)]), ":v1:")
		return nil, fmt.Errorf("%w: no configured key for provider %q", ErrDecrypt, head)
	}
	if identityListed {
		return data, nil
	}
	return nil, fmt.Errorf("%w: the value is not encrypted and the identity provider is not listed", ErrDecrypt)
}

// ResourceOfKey returns the group-resource of a storage key
// (/registry/secrets/ns/name → secrets; /registry/apps/deployments/... →
// deployments.apps). A first segment is a group when it holds a dot or is
// one of the short built-in group names.
func ResourceOfKey(key string) schema.GroupResource {
	parts := strings.SplitN(strings.TrimPrefix(key, "/registry/"), "/", 3)
	if len(parts) > 1 && (strings.Contains(parts[0], ".") || shortGroups[parts[0]]) {
		return schema.GroupResource{Group: parts[0], Resource: parts[1]}
	}
	return schema.GroupResource{Resource: parts[0]}
}

var shortGroups = map[string]bool{"apps": true, "batch": true, "policy": true, "autoscaling": true}

// Codec wraps inner so that the objects of encrypted resources are
// encrypted after encoding and decrypted before decoding, for backends
// that see objects and not keys (bbolt). resourceOf names an object's
// resource. No key is authenticated with the value there.
func (c *Config) Codec(inner runtime.Codec, resourceOf func(runtime.Object) (schema.GroupResource, bool)) runtime.Codec {
	return &codec{inner: inner, cfg: c, resourceOf: resourceOf}
}

type codec struct {
	inner      runtime.Codec
	cfg        *Config
	resourceOf func(runtime.Object) (schema.GroupResource, bool)
}

func (c *codec) Encode(obj runtime.Object, w io.Writer) error {
	gr, ok := c.resourceOf(obj)
	if !ok {
		return c.inner.Encode(obj, w)
	}
	ps := c.cfg.providersFor(gr)
	if len(ps) == 0 || ps[0].prefix() == "" {
		return c.inner.Encode(obj, w)
	}
	var buf bytes.Buffer
	if err := c.inner.Encode(obj, &buf); err != nil {
		return err
	}
	out, err := ps[0].seal(buf.Bytes(), nil)
	if err != nil {
		return fmt.Errorf("encrypting %s: %w", gr, err)
	}
	_, err = w.Write(out)
	return err
}

func (c *codec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if bytes.HasPrefix(data, []byte(encPrefix)) {
		plain, err := open(c.cfg.all, data, nil)
		if err != nil {
			return nil, nil, err
		}
		data = plain
	}
	return c.inner.Decode(data, defaults, into)
}

func (c *codec) Identifier() runtime.Identifier {
	return runtime.Identifier("encrypted-" + string(c.inner.Identifier()))
}
