package image_test

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
)

func TestImportDockerArchive(t *testing.T) {
	img := layeredImage(t)
	tag, err := name.NewTag("example.com/team/app:2")
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, tarball.Write(tag, img, &buf))
	s := newService(t, image.Config{})
	got, err := s.Import(bg, &buf, "")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, []string{"example.com/team/app:2"}, got[0].RepoTags)
	cfg, _ := img.ConfigName()
	assert.Equal(t, cfg.String(), got[0].ID, "same config, same image ID")
	layers, err := s.Layers(bg, "example.com/team/app:2")
	require.NoError(t, err)
	assert.Len(t, layers, 3)
}

func TestImportOCILayout(t *testing.T) {
	img := singleImage(t, "oci")
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendImage(img))
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, path)
		if rel == "." || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: rel, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(b)
		return err
	}))
	require.NoError(t, tw.Close())
	s := newService(t, image.Config{})
	_, err = s.Import(bg, bytes.NewReader(buf.Bytes()), "")
	assert.ErrorIs(t, err, image.ErrInvalidConfig, "an unnamed image needs a tag")
	got, err := s.Import(bg, bytes.NewReader(buf.Bytes()), "local/oci:1")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, []string{"docker.io/local/oci:1"}, got[0].RepoTags)

	_, err = s.Import(bg, strings.NewReader("not a tar"), "x:1")
	assert.Error(t, err)
}

func TestBuildPushPull(t *testing.T) {
	reg := newTestRegistry(t, nil)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etc/motd"), []byte("hi"), 0o644))
	require.NoError(t, os.Symlink("etc/motd", filepath.Join(dir, "motd")))
	img, err := build.FromDir(dir, build.Config{Cmd: []string{"/bin/sh"}})
	require.NoError(t, err)
	again, err := build.FromDir(dir, build.Config{Cmd: []string{"/bin/sh"}})
	require.NoError(t, err)
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	assert.Equal(t, d1, d2, "builds are reproducible")

	s := newService(t, image.Config{})
	_, err = s.Put(bg, img, "local/dir:1")
	require.NoError(t, err)
	dest := reg.host + "/pushed/dir:1"
	require.NoError(t, s.Push(bg, "local/dir:1", dest, nil))
	other := newService(t, image.Config{})
	got, err := other.Pull(bg, dest, nil)
	require.NoError(t, err)
	cfg, _ := img.ConfigName()
	assert.Equal(t, cfg.String(), got.ID)

	exe, err := os.Executable()
	require.NoError(t, err)
	bin, err := build.FromBinary(exe, build.Config{})
	require.NoError(t, err)
	cf, err := bin.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/" + filepath.Base(exe)}, cf.Config.Entrypoint)
	assert.Equal(t, "amd64", cf.Architecture)
}

func TestSelfSignedRegistry(t *testing.T) {
	reg, err := registry.New(registry.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	srv := httptest.NewTLSServer(reg.Handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	ref, err := name.ParseReference(host + "/secure/app:1")
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, singleImage(t, "tls"), remote.WithTransport(srv.Client().Transport)))

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	cfg, err := image.ParseRegistryConfig([]byte(`
mirrors:
  "` + host + `":
    endpoint: ["https://` + host + `"]
configs:
  "` + host + `":
    tls: {ca_file: "` + ca + `"}
`))
	require.NoError(t, err)
	s := newService(t, image.Config{Registries: cfg})
	_, err = s.Pull(bg, host+"/secure/app:1", nil)
	require.NoError(t, err)

	// Without the CA the certificate is rejected.
	untrusted, err := image.ParseRegistryConfig([]byte(`mirrors: {"` + host + `": {endpoint: ["https://` + host + `"]}}`))
	require.NoError(t, err)
	_, err = newService(t, image.Config{Registries: untrusted}).Pull(bg, host+"/secure/app:1", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
}
