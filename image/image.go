package image

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// Image is a stored image: what the kubelet and node.status.images need.
type Image struct {
	// ID is the config digest ("sha256:..."), as the CRI reports it.
	ID string `json:"id"`
	// RepoTags are normalised references by tag.
	RepoTags []string `json:"repoTags,omitempty"`
	// RepoDigests are name@digest of the manifest (or manifest list)
	// the image was pulled by.
	RepoDigests []string `json:"repoDigests,omitempty"`
	// ManifestDigest is the platform manifest's digest.
	ManifestDigest string `json:"manifestDigest"`
	// IndexDigest is the manifest list's digest, when pulled through one.
	IndexDigest string `json:"indexDigest,omitempty"`
	// MediaType is the manifest's media type.
	MediaType string `json:"mediaType"`
	// Config is the config blob.
	Config Blob `json:"config"`
	// Layers are bottom first.
	Layers []Layer `json:"layers"`
	// Size is the bytes the image takes in the content store: manifests,
	// config and compressed layers.
	Size     int64     `json:"size"`
	Platform string    `json:"platform,omitempty"`
	Created  time.Time `json:"created,omitempty"` // from the config
	Pulled   time.Time `json:"pulled"`
	LastUsed time.Time `json:"lastUsed"`
	// Pinned images are never garbage collected.
	Pinned bool `json:"pinned,omitempty"`
}

// Blob describes a content-store blob.
type Blob struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"mediaType,omitempty"`
}

// Layer is a layer blob and the digest of its uncompressed tar.
type Layer struct {
	Blob
	DiffID string `json:"diffID"`
}

// Names returns the image's names for node.status.images: repo digests
// then repo tags.
func (i *Image) Names() []string {
	out := make([]string, 0, len(i.RepoDigests)+len(i.RepoTags))
	out = append(out, i.RepoDigests...)
	return append(out, i.RepoTags...)
}

func (i *Image) clone() *Image {
	c := *i
	c.RepoTags = append([]string(nil), i.RepoTags...)
	c.RepoDigests = append([]string(nil), i.RepoDigests...)
	c.Layers = append([]Layer(nil), i.Layers...)
	return &c
}

// Puller fetches an image into the store. auth supplies credentials for
// the image's registry (nil: the node's credentials, then anonymous).
type Puller interface {
	Pull(ctx context.Context, ref string, auth authn.Keychain) (*Image, error)
}

// Store holds pulled images. Get takes a reference or an image ID and
// fails with ErrNotFound; Remove is idempotent.
type Store interface {
	Get(ctx context.Context, ref string) (*Image, error)
	List(ctx context.Context) ([]*Image, error)
	Remove(ctx context.Context, ref string) error
}

var (
	_ Puller = (*Service)(nil)
	_ Store  = (*Service)(nil)
)
