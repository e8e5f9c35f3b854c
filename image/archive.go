package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Import loads a docker-archive (`docker save`) or OCI-layout tarball into
// the store. Images are named by the archive's tags; tag, when set, names
// the (single) image instead.
func (s *Service) Import(ctx context.Context, r io.Reader, tag string) ([]*Image, error) {
	tmp, err := os.MkdirTemp(s.cfg.Root, "import-")
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(tmp)
	archive := filepath.Join(tmp, "archive.tar")
	f, err := os.Create(archive)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("import: reading archive: %w", err)
	}
	kind, err := archiveKind(archive)
	if err != nil {
		return nil, err
	}
	type named struct {
		img  v1.Image
		name string
	}
	var imgs []named
	switch kind {
	case "docker":
		opener := func() (io.ReadCloser, error) { return os.Open(archive) }
		m, err := tarball.LoadManifest(opener)
		if err != nil {
			return nil, fmt.Errorf("import: docker archive manifest: %w", err)
		}
		for _, d := range m {
			var t *name.Tag
			n := ""
			if len(d.RepoTags) > 0 {
				tt, err := name.NewTag(d.RepoTags[0])
				if err != nil {
					return nil, fmt.Errorf("import: tag %q: %w", d.RepoTags[0], err)
				}
				t, n = &tt, d.RepoTags[0]
			} else if len(m) > 1 {
				return nil, fmt.Errorf("import: untagged image in a multi-image archive: %w", ErrInvalidConfig)
			}
			img, err := tarball.Image(opener, t)
			if err != nil {
				return nil, fmt.Errorf("import: %w", err)
			}
			imgs = append(imgs, named{img, n})
		}
	case "oci":
		dir := filepath.Join(tmp, "layout")
		if err := extractLayout(archive, dir); err != nil {
			return nil, err
		}
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			return nil, fmt.Errorf("import: OCI layout: %w", err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("import: OCI layout: %w", err)
		}
		for _, d := range im.Manifests {
			n := d.Annotations["io.containerd.image.name"]
			if n == "" {
				n = d.Annotations["org.opencontainers.image.ref.name"]
			}
			var img v1.Image
			switch {
			case d.MediaType.IsImage():
				img, err = idx.Image(d.Digest)
			case d.MediaType.IsIndex():
				var child v1.ImageIndex
				if child, err = idx.ImageIndex(d.Digest); err == nil {
					var cm *v1.IndexManifest
					if cm, err = child.IndexManifest(); err == nil {
						var h v1.Hash
						if h, err = pickPlatform(cm, s.platform); err == nil {
							img, err = child.Image(h)
						}
					}
				}
			default:
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("import: OCI layout image %s: %w", d.Digest, err)
			}
			imgs = append(imgs, named{img, n})
		}
	}
	if tag != "" {
		if len(imgs) != 1 {
			return nil, fmt.Errorf("import: --tag needs an archive of one image, got %d: %w", len(imgs), ErrInvalidConfig)
		}
		imgs[0].name = tag
	}
	var out []*Image
	for _, n := range imgs {
		if n.name == "" {
			return nil, fmt.Errorf("import: image without a name; give a tag: %w", ErrInvalidConfig)
		}
		rec, err := s.Put(ctx, n.img, n.name)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", n.name, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// archiveKind tells an OCI layout ("oci") from a docker archive ("docker").
func archiveKind(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("import: not a tar archive: %w", err)
		}
		switch strings.TrimPrefix(hdr.Name, "./") {
		case "oci-layout":
			return "oci", nil
		case "manifest.json":
			return "docker", nil
		}
	}
	return "", fmt.Errorf("import: neither an OCI layout nor a docker archive: %w", ErrInvalidConfig)
}

// extractLayout unpacks an OCI layout tarball: regular files and
// directories only, never outside dir.
func extractLayout(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import: reading layout: %w", err)
		}
		rel := filepath.Clean(strings.TrimPrefix(hdr.Name, "./"))
		if rel == "." {
			continue
		}
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("import: layout entry %q escapes the archive: %w", hdr.Name, ErrInvalidConfig)
		}
		p := filepath.Join(dir, rel)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
		default:
			return fmt.Errorf("import: layout entry %q is not a file: %w", hdr.Name, ErrInvalidConfig)
		}
	}
}

// Push uploads the stored image ref to dest (a full reference), using
// dest's registry configuration and auth (nil: node credentials).
func (s *Service) Push(ctx context.Context, ref, dest string, auth authn.Keychain) error {
	img, err := s.Open(ctx, ref)
	if err != nil {
		return err
	}
	d, err := ParseReference(dest)
	if err != nil {
		return err
	}
	ep := endpoint{host: d.Domain, path: d.Path}
	for _, e := range s.cfg.Registries.endpoints(d) {
		if e.host == d.Domain {
			ep = e
		}
	}
	rt, err := s.tr.get(ep)
	if err != nil {
		return err
	}
	var opts []name.Option
	if ep.scheme == "http" {
		opts = append(opts, name.Insecure)
	}
	target := d.Domain + "/" + d.Path
	if d.Digest != "" {
		target += "@" + d.Digest
	} else {
		target += ":" + d.Tag
	}
	gref, err := name.ParseReference(target, opts...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidImageName, err)
	}
	creds := s.credentials(d, ep, auth)
	c := creds[0]
	if err := remote.Write(gref, img, s.remoteOptions(ctx, rt, c.auth)...); err != nil {
		return classify(fmt.Errorf("pushing %s: %w", dest, err), c.anonymous)
	}
	return nil
}

// MarshalImages renders images as JSON (for `podkit image ls -o json`).
func MarshalImages(images []*Image) ([]byte, error) { return json.MarshalIndent(images, "", "  ") }
