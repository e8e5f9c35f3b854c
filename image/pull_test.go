package image_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
	"github.com/podkit/podkit/overlay/overlaytest"
)

// TestPullAndUnpack pulls a multi-layer image with whiteouts and opaque
// directories from the loopback registry and checks the merged rootfs.
func TestPullAndUnpack(t *testing.T) {
	testutil.RequireRoot(t)
	reg := newTestRegistry(t, nil)
	want := layeredImage(t)
	ref := reg.push(t, want, "demo/layered:v1")
	s := newService(t, image.Config{})

	img, err := s.Pull(bg, ref, nil)
	require.NoError(t, err)
	cfgName, err := want.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, cfgName.String(), img.ID)
	assert.Len(t, img.Layers, 3)
	assert.Equal(t, []string{ref}, img.RepoTags)
	md, err := want.Digest()
	require.NoError(t, err)
	assert.Equal(t, []string{reg.host + "/demo/layered@" + md.String()}, img.RepoDigests)
	assert.Equal(t, "linux/amd64", img.Platform)
	for _, l := range img.Layers {
		h, _ := v1.NewHash(l.Digest)
		assert.True(t, s.Content().Has(h))
	}

	base := t.TempDir()
	sn, err := overlay.New(filepath.Join(base, "snapshots"))
	require.NoError(t, err)
	defer sn.Close()
	t.Cleanup(func() { overlaytest.AssertNoMounts(t, base) })
	v1layers, err := s.Layers(bg, ref)
	require.NoError(t, err)
	layers := make([]overlay.Layer, len(v1layers))
	for i, l := range v1layers {
		layers[i] = l
	}
	chain, err := overlay.NewUnpacker(sn, nil).Unpack(bg, layers)
	require.NoError(t, err)
	mounts, err := sn.Prepare(bg, "c1", chain)
	require.NoError(t, err)
	root, unmount := overlaytest.MountT(t, base, mounts)
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	assert.Equal(t, "top", read("etc/os-release"))
	assert.NoFileExists(t, filepath.Join(root, "etc/remove-me"))
	assert.NoFileExists(t, filepath.Join(root, "app/data/old"))
	assert.Equal(t, "new", read("app/data/new"))
	assert.Equal(t, "keep", read("app/keep"))
	assert.Equal(t, "tool", read("bin/tool-hard"))
	assert.Equal(t, "tool", read("tool-link"))
	entries, err := os.ReadDir(filepath.Join(root, "app/data"))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	unmount()
	require.NoError(t, sn.Remove(bg, "c1"))
}

func TestPullManifestListPicksPlatform(t *testing.T) {
	reg := newTestRegistry(t, nil)
	amd := singleImage(t, "amd64")
	arm := singleImage(t, "arm64")
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	ref := reg.pushIndex(t, idx, "multi:1")
	s := newService(t, image.Config{})
	img, err := s.Pull(bg, ref, nil)
	require.NoError(t, err)
	amdDigest, _ := amd.Digest()
	idxDigest, _ := idx.Digest()
	assert.Equal(t, amdDigest.String(), img.ManifestDigest)
	assert.Equal(t, idxDigest.String(), img.IndexDigest)
	assert.Equal(t, []string{reg.host + "/multi@" + idxDigest.String()}, img.RepoDigests, "the repo digest is what was pulled")

	s390 := newService(t, image.Config{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}})
	_, err = s390.Pull(bg, ref, nil)
	assert.ErrorIs(t, err, image.ErrNoMatchingPlatform)
}

func TestPullAuth(t *testing.T) {
	reg := newTestRegistry(t, map[string]string{"alice": "s3cret"})
	ref := reg.push(t, singleImage(t, "private"), "private/app:1")
	s := newService(t, image.Config{})

	_, err := s.Pull(bg, ref, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, image.ErrAuthRequired)
	assert.NotErrorIs(t, err, image.ErrAuthFailed)

	_, err = s.Pull(bg, ref, secretKeyring(t, reg.host, "alice", "wrong"))
	require.Error(t, err)
	assert.ErrorIs(t, err, image.ErrAuthFailed)
	assert.NotErrorIs(t, err, image.ErrAuthRequired)

	// The kubelet tries every matching credential: a bad one first is fine.
	k := secretKeyring(t, reg.host+"/private", "alice", "wrong").Merge(secretKeyring(t, reg.host, "alice", "s3cret"))
	img, err := s.Pull(bg, ref, k)
	require.NoError(t, err)
	assert.Equal(t, []string{ref}, img.RepoTags)

	// Node-level credentials.
	node := newService(t, image.Config{NodeKeyring: secretKeyring(t, reg.host, "alice", "s3cret")})
	_, err = node.Pull(bg, ref, nil)
	require.NoError(t, err)

	// Ensure reports the Kubernetes reason.
	_, err = newService(t, image.Config{}).Ensure(bg, ref, corev1.PullIfNotPresent, nil)
	assert.Equal(t, "ErrImagePull", image.Reason(err))
	assert.ErrorIs(t, err, image.ErrAuthRequired)
}

func TestPullFailuresLeaveNothing(t *testing.T) {
	reg := newTestRegistry(t, nil)
	img := layeredImage(t)
	ref := reg.push(t, img, "demo/app:1")
	s := newService(t, image.Config{})

	_, err := s.Pull(bg, reg.host+"/demo/missing:1", nil)
	assert.ErrorIs(t, err, image.ErrManifestUnknown)
	_, err = s.Pull(bg, reg.host+"/demo/app:nope", nil)
	assert.ErrorIs(t, err, image.ErrManifestUnknown)

	layers, err := img.Layers()
	require.NoError(t, err)
	big, err := layers[0].Digest()
	require.NoError(t, err)
	reg.setCut(big.String(), true)
	_, err = s.Pull(bg, ref, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, image.ErrRegistryUnavailable)
	assert.False(t, s.Content().Has(big), "no partial blob")
	ingest, err := s.Content().IngestEntries()
	require.NoError(t, err)
	assert.Empty(t, ingest)
	_, err = s.Get(bg, ref)
	assert.ErrorIs(t, err, image.ErrNotFound)

	reg.setCut(big.String(), false)
	got, err := s.Pull(bg, ref, nil)
	require.NoError(t, err, "the next pull succeeds")
	assert.True(t, s.Content().Has(big))
	assert.Len(t, got.Layers, 3)

	reg.srv.Close()
	_, err = s.Pull(bg, ref, nil)
	assert.ErrorIs(t, err, image.ErrRegistryUnavailable)
	_, err = s.Ensure(bg, ref, corev1.PullAlways, nil)
	assert.Equal(t, "ErrImagePull", image.Reason(err))
	local, err := s.Ensure(bg, ref, corev1.PullIfNotPresent, nil)
	require.NoError(t, err, "IfNotPresent needs no registry once pulled")
	assert.Equal(t, got.ID, local.ID)
}

func TestConcurrentPullsDownloadOnce(t *testing.T) {
	reg := newTestRegistry(t, nil)
	ref := reg.push(t, layeredImage(t), "demo/app:1")
	s := newService(t, image.Config{})
	reg.blobGets.Store(0)
	var wg sync.WaitGroup
	ids := make([]string, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := s.Pull(bg, ref, nil)
			if assert.NoError(t, err) {
				ids[i] = img.ID
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		assert.Equal(t, ids[0], id)
	}
	// Three layers plus the config.
	assert.LessOrEqual(t, reg.blobGets.Load(), int64(4))
	imgs, err := s.List(bg)
	require.NoError(t, err)
	assert.Len(t, imgs, 1)
}

func TestPullPolicies(t *testing.T) {
	reg := newTestRegistry(t, nil)
	ref := reg.push(t, singleImage(t, "v1"), "app:1")
	s := newService(t, image.Config{})

	_, err := s.Ensure(bg, ref, corev1.PullNever, nil)
	require.Error(t, err)
	assert.Equal(t, "ErrImageNeverPull", image.Reason(err))
	assert.Equal(t, `Container image "`+ref+`" is not present with pull policy of Never`, err.Error())

	_, err = s.Ensure(bg, "Bad:Name", corev1.PullAlways, nil)
	assert.Equal(t, "InvalidImageName", image.Reason(err))

	first, err := s.Ensure(bg, ref, corev1.PullIfNotPresent, nil)
	require.NoError(t, err)
	_, err = s.Ensure(bg, ref, corev1.PullNever, nil)
	require.NoError(t, err)

	// The tag moves; Always follows it, IfNotPresent keeps the local one.
	reg.push(t, singleImage(t, "v2"), "app:1")
	kept, err := s.Ensure(bg, ref, corev1.PullIfNotPresent, nil)
	require.NoError(t, err)
	assert.Equal(t, first.ID, kept.ID)
	moved, err := s.Ensure(bg, ref, corev1.PullAlways, nil)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, moved.ID)
	old, err := s.Get(bg, first.ID)
	require.NoError(t, err)
	assert.Empty(t, old.RepoTags, "the tag moved to the new image")
	assert.NotEmpty(t, old.RepoDigests)
}

func TestMetadataSurvivesRestart(t *testing.T) {
	reg := newTestRegistry(t, nil)
	ref := reg.push(t, singleImage(t, "persist"), "app:1")
	root := t.TempDir()
	s := newService(t, image.Config{Root: root})
	img, err := s.Pull(bg, ref, nil)
	require.NoError(t, err)

	again := newService(t, image.Config{Root: root})
	got, err := again.Get(bg, ref)
	require.NoError(t, err)
	assert.Equal(t, img.ID, got.ID)
	assert.Equal(t, img.Size, got.Size)
	for _, name := range []string{img.ID, img.ID[len("sha256:"):][:12], img.RepoDigests[0]} {
		_, err := again.Get(bg, name)
		assert.NoError(t, err, name)
	}
	l, err := again.Layers(bg, ref)
	require.NoError(t, err)
	require.Len(t, l, 1)
	d, err := l[0].DiffID()
	require.NoError(t, err)
	assert.Equal(t, img.Layers[0].DiffID, d.String())
}

func TestMirrorAndPlainHTTP(t *testing.T) {
	reg := newTestRegistry(t, nil)
	reg.push(t, singleImage(t, "mirrored"), "library/busybox:1")
	cfg, err := image.ParseRegistryConfig([]byte(`
mirrors:
  docker.io:
    endpoint: ["http://` + reg.host + `"]
disable_default_endpoint: true
`))
	require.NoError(t, err)
	s := newService(t, image.Config{Registries: cfg})
	img, err := s.Pull(bg, "busybox:1", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"docker.io/library/busybox:1"}, img.RepoTags)

	_, err = image.ParseRegistryConfig([]byte("mirrors: {x: {endpoint: [\"ftp://a\"]}}"))
	assert.ErrorIs(t, err, image.ErrInvalidConfig)
	_, err = image.ParseRegistryConfig([]byte("unknown: 1"))
	assert.ErrorIs(t, err, image.ErrInvalidConfig)
}

func TestRemoveAndGC(t *testing.T) {
	reg := newTestRegistry(t, nil)
	s := newService(t, image.Config{})
	var ids []string
	for _, tag := range []string{"a", "b", "c"} {
		img, err := s.Pull(bg, reg.push(t, singleImage(t, tag), "app:"+tag), nil)
		require.NoError(t, err)
		ids = append(ids, img.ID)
	}
	require.NoError(t, s.Touch(bg, ids[0])) // a is the most recently used
	require.NoError(t, s.Pin(bg, ids[2], true))

	full := func() (int64, int64, error) { return 100, 5, nil } // 95% used
	res, err := s.GarbageCollect(bg, image.GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, DiskStats: full}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{ids[1]}, res.Removed, "least recently used first, pinned kept, stops once enough is freed")

	res, err = s.GarbageCollect(bg, image.GCPolicy{HighThresholdPercent: 85, LowThresholdPercent: 80,
		DiskStats: func() (int64, int64, error) { return 100, 50, nil }}, nil)
	require.NoError(t, err)
	assert.Empty(t, res.Removed, "below the high threshold nothing goes")

	_, err = s.GarbageCollect(bg, image.GCPolicy{HighThresholdPercent: 50, LowThresholdPercent: 60}, nil)
	assert.ErrorIs(t, err, image.ErrInvalidConfig)

	img, err := s.Get(bg, ids[0])
	require.NoError(t, err)
	require.NoError(t, s.Remove(bg, reg.host+"/app:a"))
	require.NoError(t, s.Remove(bg, ids[0]), "idempotent")
	h, _ := v1.NewHash(img.Layers[0].Digest)
	assert.False(t, s.Content().Has(h), "unused blobs go with the image")
	imgs, err := s.List(bg)
	require.NoError(t, err)
	assert.Len(t, imgs, 1)
}
