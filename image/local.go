package image

import (
	"bytes"
	"context"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

// storeImage downloads img's blobs into the content store (layers in
// parallel, each verified) and records it under r. indexRaw/indexHash are
// the manifest list it was picked from, if any; top is the digest r
// resolved to (the repo digest).
func (s *Service) storeImage(ctx context.Context, r Reference, img v1.Image, indexRaw []byte, indexHash v1.Hash, top string) (*Image, error) {
	manifestRaw, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	mdigest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("decoding manifest: %w", err)
	}
	cfgRaw, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	if len(cf.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("manifest has %d layers, config %d diff IDs: %w", len(m.Layers), len(cf.RootFS.DiffIDs), ErrDigestMismatch)
	}
	if err := s.content.Put(ctx, m.Config.Digest, m.Config.Size, bytes.NewReader(cfgRaw)); err != nil {
		return nil, fmt.Errorf("storing config: %w", err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for _, ld := range m.Layers {
		g.Go(func() error {
			_, err := s.content.Ingest(gctx, ld.Digest, ld.Size, func() (io.ReadCloser, error) {
				l, err := img.LayerByDigest(ld.Digest)
				if err != nil {
					return nil, err
				}
				return l.Compressed()
			})
			if err != nil {
				return fmt.Errorf("layer %s: %w", ld.Digest, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := s.content.Put(ctx, mdigest, int64(len(manifestRaw)), bytes.NewReader(manifestRaw)); err != nil {
		return nil, fmt.Errorf("storing manifest: %w", err)
	}
	size := int64(len(manifestRaw)) + m.Config.Size
	rec := &Image{
		ID:             m.Config.Digest.String(),
		ManifestDigest: mdigest.String(),
		MediaType:      string(mt),
		Config:         Blob{Digest: m.Config.Digest.String(), Size: m.Config.Size, MediaType: string(m.Config.MediaType)},
		Platform:       (&v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String(),
		Created:        cf.Created.Time,
		Pulled:         s.cfg.Now().UTC(),
	}
	if len(indexRaw) > 0 {
		if err := s.content.Put(ctx, indexHash, int64(len(indexRaw)), bytes.NewReader(indexRaw)); err != nil {
			return nil, fmt.Errorf("storing manifest list: %w", err)
		}
		rec.IndexDigest = indexHash.String()
		size += int64(len(indexRaw))
	}
	for i, ld := range m.Layers {
		rec.Layers = append(rec.Layers, Layer{
			Blob:   Blob{Digest: ld.Digest.String(), Size: ld.Size, MediaType: string(ld.MediaType)},
			DiffID: cf.RootFS.DiffIDs[i].String(),
		})
		size += ld.Size
	}
	rec.Size = size
	if r.Tag != "" {
		rec.RepoTags = []string{r.String()}
	}
	if top != "" {
		rec.RepoDigests = []string{r.WithDigest(top).String()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.meta.put(rec)
	if err := s.meta.save(); err != nil {
		return nil, err
	}
	return stored.clone(), nil
}

// Put stores a locally built image under ref (a tag reference).
func (s *Service) Put(ctx context.Context, img v1.Image, ref string) (*Image, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	top := ""
	if r.Digest != "" {
		top = d.String()
	}
	return s.storeImage(ctx, r, img, nil, v1.Hash{}, top)
}

// Open returns the stored image as a go-containerregistry image backed by
// the content store: its layers feed overlay.Unpacker, push and export.
func (s *Service) Open(ctx context.Context, ref string) (v1.Image, error) {
	img, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&localImage{s: s, img: img})
}

// Layers returns the stored image's layers, bottom first.
func (s *Service) Layers(ctx context.Context, ref string) ([]v1.Layer, error) {
	img, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	return img.Layers()
}

// localImage implements partial.CompressedImageCore over the store.
type localImage struct {
	s   *Service
	img *Image
}

func (l *localImage) blob(d string) ([]byte, error) {
	h, err := v1.NewHash(d)
	if err != nil {
		return nil, err
	}
	return l.s.content.ReadAll(h)
}

func (l *localImage) RawConfigFile() ([]byte, error) { return l.blob(l.img.Config.Digest) }
func (l *localImage) MediaType() (types.MediaType, error) {
	return types.MediaType(l.img.MediaType), nil
}
func (l *localImage) RawManifest() ([]byte, error) { return l.blob(l.img.ManifestDigest) }

func (l *localImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, ly := range l.img.Layers {
		if ly.Digest == h.String() {
			return &localLayer{s: l.s, layer: ly, digest: h}, nil
		}
	}
	if h.String() == l.img.Config.Digest {
		return &localLayer{s: l.s, layer: Layer{Blob: l.img.Config}, digest: h}, nil
	}
	return nil, fmt.Errorf("blob %s of image %s: %w", h, l.img.ID, ErrNotFound)
}

type localLayer struct {
	s      *Service
	layer  Layer
	digest v1.Hash
}

func (l *localLayer) Digest() (v1.Hash, error) { return l.digest, nil }
func (l *localLayer) Size() (int64, error)     { return l.layer.Size, nil }
func (l *localLayer) MediaType() (types.MediaType, error) {
	return types.MediaType(l.layer.MediaType), nil
}
func (l *localLayer) Compressed() (io.ReadCloser, error) { return l.s.content.Open(l.digest) }

// DiffID lets partial skip hashing the uncompressed stream.
func (l *localLayer) DiffID() (v1.Hash, error) { return v1.NewHash(l.layer.DiffID) }
