package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// credential is one way to authenticate to an endpoint.
type credential struct {
	auth      authn.Authenticator
	anonymous bool
	id        string // fingerprint, for deduplicating pulls
}

// Pull fetches ref into the store and records it. auth supplies the
// pod's credentials (a *Keyring gives every matching credential, tried in
// turn); the node keyring and the registry configuration's credentials
// follow; without any, the pull is anonymous. Concurrent pulls of one
// reference with the same credentials share one download.
func (s *Service) Pull(ctx context.Context, ref string, auth authn.Keychain) (*Image, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return nil, err
	}
	key := r.String()
	for _, ep := range s.cfg.Registries.endpoints(r) {
		for _, c := range s.credentials(r, ep, auth) {
			key += "\x00" + c.id
		}
	}
	v, err, _ := s.flight.Do(key, func() (any, error) { return s.pull(ctx, r, auth) })
	if err != nil {
		return nil, err
	}
	return v.(*Image).clone(), nil
}

func (s *Service) pull(ctx context.Context, r Reference, auth authn.Keychain) (*Image, error) {
	var errs []error
	for _, ep := range s.cfg.Registries.endpoints(r) {
		img, err := s.pullFrom(ctx, r, ep, auth)
		if err == nil {
			return img, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.cfg.Log.DebugContext(ctx, "pull from endpoint failed", "ref", r.String(), "endpoint", ep.host, "err", err)
		errs = append(errs, fmt.Errorf("pulling %s from %s: %w", r.String(), ep.host, err))
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// credentials lists what to try at ep: for the registry itself the pod's
// and node's matching credentials, for a mirror only the configured ones
// (a pod's secrets are for the registry it names); then the endpoint's
// configured credentials; anonymous when there are none.
func (s *Service) credentials(r Reference, ep endpoint, kc authn.Keychain) []credential {
	var out []credential
	add := func(a authn.AuthConfig) {
		b, _ := json.Marshal(a)
		sum := sha256.Sum256(b)
		out = append(out, credential{auth: authn.FromConfig(a), id: hex.EncodeToString(sum[:8])})
	}
	if !ep.mirror {
		switch k := kc.(type) {
		case nil:
		case *Keyring:
			for _, a := range k.Lookup(r) {
				add(a)
			}
		default:
			if res, err := name.NewRepository(r.Name()); err == nil {
				if a, err := kc.Resolve(res); err == nil && a != authn.Anonymous {
					if cfg, err := a.Authorization(); err == nil {
						add(*cfg)
					}
				}
			}
		}
		for _, a := range s.cfg.NodeKeyring.Lookup(r) {
			add(a)
		}
	}
	if a, ok := s.cfg.Registries.hostAuth(ep.host); ok {
		add(a)
	}
	if len(out) == 0 {
		out = append(out, credential{auth: authn.Anonymous, anonymous: true, id: "anonymous"})
	}
	return out
}

func (s *Service) pullFrom(ctx context.Context, r Reference, ep endpoint, kc authn.Keychain) (*Image, error) {
	rt, err := s.tr.get(ep)
	if err != nil {
		return nil, err
	}
	var opts []name.Option
	if ep.scheme == "http" {
		opts = append(opts, name.Insecure)
	}
	refStr := ep.host + "/" + ep.path
	if r.Digest != "" {
		refStr += "@" + r.Digest
	} else {
		refStr += ":" + r.Tag
	}
	gref, err := name.ParseReference(refStr, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidImageName, err)
	}
	creds := s.credentials(r, ep, kc)
	var errs []error
	for _, c := range creds {
		img, err := s.fetch(ctx, r, gref, rt, c.auth)
		if err == nil {
			return img, nil
		}
		err = classify(err, c.anonymous)
		if !errors.Is(err, ErrAuthFailed) {
			return nil, err
		}
		errs = append(errs, err) // try the next credential
	}
	return nil, errors.Join(errs...)
}

func (s *Service) remoteOptions(ctx context.Context, rt http.RoundTripper, auth authn.Authenticator) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(rt),
		remote.WithAuth(auth),
		remote.WithPlatform(s.platform),
		remote.WithRetryBackoff(*s.cfg.Retry),
		remote.WithUserAgent("podkit"),
	}
}

func (s *Service) fetch(ctx context.Context, r Reference, gref name.Reference, rt http.RoundTripper, auth authn.Authenticator) (*Image, error) {
	desc, err := remote.Get(gref, s.remoteOptions(ctx, rt, auth)...)
	if err != nil {
		return nil, err
	}
	var (
		img       v1.Image
		indexRaw  []byte
		indexHash v1.Hash
	)
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		child, err := pickPlatform(im, s.platform)
		if err != nil {
			return nil, err
		}
		if img, err = idx.Image(child); err != nil {
			return nil, err
		}
		indexRaw, indexHash = desc.Manifest, desc.Digest
	case desc.MediaType.IsImage():
		if img, err = desc.Image(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unsupported manifest media type %q", desc.MediaType)
	}
	return s.storeImage(ctx, r, img, indexRaw, indexHash, desc.Digest.String())
}

// pickPlatform chooses the manifest for p from a manifest list.
func pickPlatform(im *v1.IndexManifest, p v1.Platform) (v1.Hash, error) {
	var fallback *v1.Descriptor
	for i := range im.Manifests {
		d := &im.Manifests[i]
		if d.Platform == nil || !d.MediaType.IsImage() {
			continue
		}
		if d.Platform.OS != p.OS || d.Platform.Architecture != p.Architecture {
			continue
		}
		if d.Platform.Variant == p.Variant {
			return d.Digest, nil
		}
		if fallback == nil && (p.Variant == "" || d.Platform.Variant == "") {
			fallback = d
		}
	}
	if fallback != nil {
		return fallback.Digest, nil
	}
	return v1.Hash{}, fmt.Errorf("%s: %w", p.String(), ErrNoMatchingPlatform)
}

// classify maps registry and network failures to this package's errors.
func classify(err error, anonymous bool) error {
	for _, s := range []error{ErrAuthRequired, ErrAuthFailed, ErrManifestUnknown, ErrRegistryUnavailable, ErrDigestMismatch, ErrNoMatchingPlatform} {
		if errors.Is(err, s) {
			return err
		}
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch {
		case terr.StatusCode == http.StatusUnauthorized || terr.StatusCode == http.StatusForbidden:
			if anonymous {
				return fmt.Errorf("%w: %w", ErrAuthRequired, err)
			}
			return fmt.Errorf("%w: %w", ErrAuthFailed, err)
		case terr.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrManifestUnknown, err)
		case terr.StatusCode == http.StatusTooManyRequests || terr.StatusCode >= 500:
			return fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
		}
		return err
	}
	var nerr net.Error
	var uerr *url.Error
	if errors.As(err, &nerr) || errors.As(err, &uerr) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %w", ErrRegistryUnavailable, err)
	}
	return err
}
