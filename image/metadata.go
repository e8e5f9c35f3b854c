package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// metadata is the image index, persisted as one JSON file written
// atomically. The Service's mutex guards it.
type metadata struct {
	path   string
	images map[string]*Image // by ID
}

type metadataFile struct {
	Version int      `json:"version"`
	Images  []*Image `json:"images"`
}

func loadMetadata(path string) (*metadata, error) {
	m := &metadata{path: path, images: map[string]*Image{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading image metadata: %w", err)
	}
	var f metadataFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("decoding image metadata %s: %w", path, err)
	}
	for _, img := range f.Images {
		m.images[img.ID] = img
	}
	return m, nil
}

func (m *metadata) save() error {
	f := metadataFile{Version: 1}
	for _, img := range m.images {
		f.Images = append(f.Images, img)
	}
	sort.Slice(f.Images, func(i, j int) bool { return f.Images[i].ID < f.Images[j].ID })
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding image metadata: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.path), ".images-*.json")
	if err != nil {
		return fmt.Errorf("writing image metadata: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("writing image metadata: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing image metadata: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing image metadata: %w", err)
	}
	if err := os.Rename(tmp.Name(), m.path); err != nil {
		return fmt.Errorf("writing image metadata: %w", err)
	}
	return nil
}

// lookup finds an image by ID (with or without "sha256:", or a unique hex
// prefix of at least 12), by normalised tag or by digest reference.
func (m *metadata) lookup(ref string) *Image {
	if img, ok := m.images[ref]; ok {
		return img
	}
	if img, ok := m.images["sha256:"+ref]; ok {
		return img
	}
	if len(ref) >= 12 && strings.Trim(ref, "0123456789abcdef") == "" {
		var found *Image
		for id, img := range m.images {
			if strings.HasPrefix(strings.TrimPrefix(id, "sha256:"), ref) {
				if found != nil {
					return nil // ambiguous
				}
				found = img
			}
		}
		if found != nil {
			return found
		}
	}
	r, err := ParseReference(ref)
	if err != nil {
		return nil
	}
	key := r.String()
	for _, img := range m.images {
		if slices.Contains(img.RepoTags, key) || slices.Contains(img.RepoDigests, key) {
			return img
		}
		if r.Digest != "" && (img.ManifestDigest == r.Digest || img.IndexDigest == r.Digest) &&
			repoOf(img, r.Name()) {
			return img
		}
	}
	return nil
}

// repoOf reports whether img has a name in repository name.
func repoOf(img *Image, name string) bool {
	for _, n := range img.Names() {
		if strings.HasPrefix(n, name+":") || strings.HasPrefix(n, name+"@") {
			return true
		}
	}
	return false
}

// put records img, merging names into an existing image with the same ID
// and taking its tags away from other images (a tag names one image).
func (m *metadata) put(img *Image) *Image {
	for id, other := range m.images {
		if id == img.ID {
			continue
		}
		other.RepoTags = slices.DeleteFunc(other.RepoTags, func(t string) bool { return slices.Contains(img.RepoTags, t) })
	}
	if cur, ok := m.images[img.ID]; ok {
		for _, t := range img.RepoTags {
			if !slices.Contains(cur.RepoTags, t) {
				cur.RepoTags = append(cur.RepoTags, t)
			}
		}
		for _, d := range img.RepoDigests {
			if !slices.Contains(cur.RepoDigests, d) {
				cur.RepoDigests = append(cur.RepoDigests, d)
			}
		}
		if img.LastUsed.After(cur.LastUsed) {
			cur.LastUsed = img.LastUsed
		}
		if img.Pulled.After(cur.Pulled) {
			cur.Pulled = img.Pulled
		}
		if cur.IndexDigest == "" {
			cur.IndexDigest = img.IndexDigest
		}
		return cur
	}
	m.images[img.ID] = img
	return img
}
