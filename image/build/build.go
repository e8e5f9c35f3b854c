// Package build makes small OCI images without a network: a single layer
// from a directory or a static binary, or layers from explicit archive
// entries (whiteouts and all) for tests. `podkit image build` uses it.
package build

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrInvalid reports bad input to a builder.
var ErrInvalid = errors.New("invalid build input")

// Config is the runtime configuration of a built image.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	Labels     map[string]string
	// Platform defaults to linux/amd64.
	Platform *v1.Platform
	// Created is the image creation time (zero: the Unix epoch, so builds
	// are reproducible).
	Created time.Time
}

// Entry is one archive entry of a layer built by Layer.
type Entry struct {
	Name     string
	Type     byte // tar.TypeReg when 0
	Body     []byte
	Linkname string
	Mode     int64 // 0644 for files, 0755 for directories when 0
	UID, GID int
	Xattrs   map[string]string
}

// Layer builds a gzip-compressed layer from entries, in order. Whiteouts
// are plain entries named ".wh.<name>" or ".wh..wh..opq".
func Layer(entries []Entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
			if typ == tar.TypeDir {
				mode = 0o755
			}
		}
		hdr := &tar.Header{
			Name: e.Name, Typeflag: typ, Linkname: e.Linkname, Mode: mode,
			Uid: e.UID, Gid: e.GID, ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		for k, v := range e.Xattrs {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("layer entry %q: %w", e.Name, err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(e.Body); err != nil {
				return nil, fmt.Errorf("layer entry %q: %w", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return LayerFromTar(buf.Bytes())
}

// LayerFromTar wraps an uncompressed tar as a gzip-compressed layer.
func LayerFromTar(b []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// LayerFromDir builds a layer holding the tree at dir, rooted at "/" of
// the image. Entries are sorted, owned by root and dated at the epoch, so
// the same tree gives the same digest.
func LayerFromDir(dir string) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = time.Unix(0, 0), time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("building layer from %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return LayerFromTar(buf.Bytes())
}

// Image assembles an image from layers (bottom first) and cfg.
func Image(layers []v1.Layer, cfg Config) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, fmt.Errorf("adding layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	if cfg.Platform != nil {
		p = *cfg.Platform
	}
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Config.Entrypoint = cfg.Entrypoint
	cf.Config.Cmd = cfg.Cmd
	cf.Config.Env = cfg.Env
	cf.Config.WorkingDir = cfg.WorkingDir
	cf.Config.User = cfg.User
	cf.Config.Labels = cfg.Labels
	created := cfg.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	cf.Created = v1.Time{Time: created.UTC()}
	return mutate.ConfigFile(img, cf)
}

// FromDir builds a single-layer image of the tree at dir.
func FromDir(dir string, cfg Config) (v1.Image, error) {
	l, err := LayerFromDir(dir)
	if err != nil {
		return nil, err
	}
	return Image([]v1.Layer{l}, cfg)
}

// FromBinary builds a single-layer image holding the static executable at
// binPath as /<name> (its base name), with that as the entrypoint unless
// cfg has one. Static binaries need nothing else to run.
func FromBinary(binPath string, cfg Config) (v1.Image, error) {
	b, err := os.ReadFile(binPath)
	if err != nil {
		return nil, fmt.Errorf("reading binary: %w", err)
	}
	name := path.Base(filepath.ToSlash(binPath))
	if name == "." || name == "/" {
		return nil, fmt.Errorf("binary path %q: %w", binPath, ErrInvalid)
	}
	entries := []Entry{
		{Name: "etc/", Type: tar.TypeDir},
		{Name: "etc/passwd", Body: []byte("root:x:0:0:root:/:/" + name + "\nnobody:x:65534:65534:nobody:/:/" + name + "\n")},
		{Name: "etc/group", Body: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		{Name: name, Body: b, Mode: 0o755},
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	l, err := Layer(entries)
	if err != nil {
		return nil, err
	}
	if len(cfg.Entrypoint) == 0 {
		cfg.Entrypoint = []string{"/" + name}
	}
	return Image([]v1.Layer{l}, cfg)
}
