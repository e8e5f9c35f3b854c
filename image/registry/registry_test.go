package registry_test

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image/registry"
)

func TestRegistryPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := registry.New(registry.Config{DataDir: dir, Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	img, err := random.Image(1024, 2)
	require.NoError(t, err)
	ref, err := name.ParseReference(s.Addr() + "/demo/app:v1")
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithContext(context.Background())))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")

	s2, err := registry.New(registry.Config{DataDir: dir, Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, s2.Start())
	defer s2.Close()
	ref2, err := name.ParseReference(s2.Addr() + "/demo/app:v1")
	require.NoError(t, err)
	got, err := remote.Image(ref2)
	require.NoError(t, err)
	want, _ := img.Digest()
	have, err := got.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, have)
	layers, err := got.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		rc, err := l.Compressed()
		require.NoError(t, err)
		require.NoError(t, rc.Close())
	}
}

func TestRegistryBasicAuth(t *testing.T) {
	s, err := registry.New(registry.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0", Users: map[string]string{"u": "p"}})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	defer s.Close()
	img, err := random.Image(100, 1)
	require.NoError(t, err)
	ref, err := name.ParseReference(s.Addr() + "/x:1")
	require.NoError(t, err)
	err = remote.Write(ref, img)
	var terr *transport.Error
	require.ErrorAs(t, err, &terr)
	assert.Equal(t, 401, terr.StatusCode)
	require.NoError(t, remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "u", Password: "p"})))
}

func TestNewRequiresDataDir(t *testing.T) {
	_, err := registry.New(registry.Config{})
	assert.ErrorIs(t, err, registry.ErrInvalidConfig)
}
