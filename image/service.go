package image

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image/content"
)

// Config configures a Service. Root is required.
type Config struct {
	// Root holds content/ (blobs) and images.json (metadata).
	Root string
	// Registries configures mirrors, TLS and host credentials.
	Registries *RegistryConfig
	// NodeKeyring holds the node's credentials, tried after a pod's pull
	// secrets.
	NodeKeyring *Keyring
	// Platform to pick from manifest lists; linux/amd64 by default.
	Platform *v1.Platform
	// Transport is the base HTTP transport (cloned per host).
	Transport *http.Transport
	// Concurrency is how many layers download at once (default 3).
	Concurrency int
	// Retry is the backoff of retried registry requests (default: 3 tries
	// 200ms apart, doubling).
	Retry *remote.Backoff
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Service is the node's image store and puller.
type Service struct {
	cfg      Config
	content  *content.Store
	platform v1.Platform
	tr       *transports
	flight   singleflight.Group

	mu   sync.Mutex
	meta *metadata
}

// New opens the image store at cfg.Root, loading the persisted metadata.
func New(cfg Config) (*Service, error) {
	if cfg.Root == "" {
		return nil, fmt.Errorf("image store root required: %w", ErrInvalidConfig)
	}
	if cfg.Registries == nil {
		cfg.Registries = &RegistryConfig{}
	}
	if err := cfg.Registries.Validate(); err != nil {
		return nil, err
	}
	if cfg.NodeKeyring == nil {
		cfg.NodeKeyring = NewKeyring()
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 3
	}
	if cfg.Retry == nil {
		cfg.Retry = &remote.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	if cfg.Platform != nil {
		p = *cfg.Platform
	}
	cs, err := content.Open(filepath.Join(cfg.Root, "content"))
	if err != nil {
		return nil, err
	}
	meta, err := loadMetadata(filepath.Join(cfg.Root, "images.json"))
	if err != nil {
		return nil, err
	}
	return &Service{
		cfg: cfg, content: cs, platform: p, meta: meta,
		tr: &transports{base: cfg.Transport, cfg: cfg.Registries},
	}, nil
}

// Content returns the blob store.
func (s *Service) Content() *content.Store { return s.content }

// Get returns the image named by ref (a reference, or an image ID).
func (s *Service) Get(_ context.Context, ref string) (*Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.meta.lookup(ref)
	if img == nil {
		return nil, fmt.Errorf("image %q: %w", ref, ErrNotFound)
	}
	return img.clone(), nil
}

// List returns every image, by ID.
func (s *Service) List(_ context.Context) ([]*Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Image, 0, len(s.meta.images))
	for _, img := range s.meta.images {
		out = append(out, img.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Touch records that ref was just used (for garbage collection).
func (s *Service) Touch(_ context.Context, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.meta.lookup(ref)
	if img == nil {
		return fmt.Errorf("image %q: %w", ref, ErrNotFound)
	}
	img.LastUsed = s.cfg.Now().UTC()
	return s.meta.save()
}

// Pin marks an image as never garbage collected (or not).
func (s *Service) Pin(_ context.Context, ref string, pinned bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.meta.lookup(ref)
	if img == nil {
		return fmt.Errorf("image %q: %w", ref, ErrNotFound)
	}
	img.Pinned = pinned
	return s.meta.save()
}

// Remove deletes the image named by ref (all its names, as the CRI
// does) and the blobs no other image uses. A missing image is not an
// error.
func (s *Service) Remove(_ context.Context, ref string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	img := s.meta.lookup(ref)
	if img == nil {
		return nil
	}
	delete(s.meta.images, img.ID)
	if err := s.meta.save(); err != nil {
		s.meta.images[img.ID] = img
		return err
	}
	return s.deleteUnusedBlobs(img)
}

// deleteUnusedBlobs removes img's blobs that no remaining image uses.
// Called with s.mu held.
func (s *Service) deleteUnusedBlobs(img *Image) error {
	used := map[string]bool{}
	for _, other := range s.meta.images {
		for _, d := range blobsOf(other) {
			used[d] = true
		}
	}
	for _, d := range blobsOf(img) {
		if used[d] {
			continue
		}
		h, err := v1.NewHash(d)
		if err != nil {
			continue
		}
		if err := s.content.Delete(h); err != nil {
			return err
		}
	}
	return nil
}

func blobsOf(img *Image) []string {
	out := []string{img.ManifestDigest, img.Config.Digest}
	if img.IndexDigest != "" {
		out = append(out, img.IndexDigest)
	}
	for _, l := range img.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// DefaultPullPolicy is the policy Kubernetes defaults to: Always for
// ":latest" (or no tag), IfNotPresent otherwise.
func DefaultPullPolicy(ref Reference) corev1.PullPolicy {
	if ref.IsLatest() {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// Ensure makes the image available under the pull policy, like the
// kubelet's image manager: Never uses only a local image
// (ErrImageNeverPull otherwise), IfNotPresent pulls when missing, Always
// resolves the reference again (downloading only what changed). Errors
// carry the Kubernetes reason (see Reason) and the cause. An empty
// policy is defaulted with DefaultPullPolicy.
func (s *Service) Ensure(ctx context.Context, ref string, policy corev1.PullPolicy, auth authn.Keychain) (*Image, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return nil, withReason(ErrInvalidImageName, err, "Failed to apply default image tag %q: %v", ref, err)
	}
	if policy == "" {
		policy = DefaultPullPolicy(r)
	}
	local, _ := s.Get(ctx, r.String())
	switch policy {
	case corev1.PullNever:
		if local == nil {
			return nil, withReason(ErrImageNeverPull, ErrNotFound, "Container image %q is not present with pull policy of Never", ref)
		}
		return local, s.Touch(ctx, local.ID)
	case corev1.PullIfNotPresent:
		if local != nil {
			return local, s.Touch(ctx, local.ID)
		}
	case corev1.PullAlways:
	default:
		return nil, withReason(ErrImagePull, ErrInvalidConfig, "unknown pull policy %q", policy)
	}
	img, err := s.Pull(ctx, ref, auth)
	if err != nil {
		return nil, withReason(ErrImagePull, err, "%s", err.Error())
	}
	return img, s.Touch(ctx, img.ID)
}
