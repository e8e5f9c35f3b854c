package image_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/overlay"
)

// benchImage builds a multi-layer image of about PODKIT_BENCH_IMAGE_MB
// (default 100) megabytes of incompressible files.
func benchImage(b *testing.B) (v1.Image, int64) {
	mb := 100
	if v, err := strconv.Atoi(os.Getenv("PODKIT_BENCH_IMAGE_MB")); err == nil && v > 0 {
		mb = v
	}
	const layers, filesPerLayer = 4, 8
	size := int64(mb) << 20 / (layers * filesPerLayer)
	var ls []v1.Layer
	for i := range layers {
		var entries []build.Entry
		for j := range filesPerLayer {
			body := make([]byte, size)
			_, _ = rand.Read(body)
			entries = append(entries, build.Entry{Name: fmt.Sprintf("l%d/f%d", i, j), Body: body})
		}
		l, err := build.Layer(entries)
		require.NoError(b, err)
		ls = append(ls, l)
	}
	img, err := build.Image(ls, build.Config{})
	require.NoError(b, err)
	return img, size * layers * filesPerLayer
}

// BenchmarkPullUnpack pulls a ~100 MB four-layer image from the loopback
// registry and unpacks it into overlay snapshots. The skopeo sub-benchmark
// copies the same image to an OCI directory with `skopeo copy`, the peer
// measured in the same run (skipped when skopeo is not installed).
func BenchmarkPullUnpack(b *testing.B) {
	testutil.RequireRoot(b)
	reg := newTestRegistry(b, nil)
	img, total := benchImage(b)
	ref := reg.push(b, img, "bench/big:1")

	b.Run("podkit", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			dir := b.TempDir()
			s, err := image.New(image.Config{Root: filepath.Join(dir, "images")})
			require.NoError(b, err)
			sn, err := overlay.New(filepath.Join(dir, "snapshots"))
			require.NoError(b, err)
			_, err = s.Pull(bg, ref, nil)
			require.NoError(b, err)
			v1layers, err := s.Layers(bg, ref)
			require.NoError(b, err)
			layers := make([]overlay.Layer, len(v1layers))
			for i, l := range v1layers {
				layers[i] = l
			}
			_, err = overlay.NewUnpacker(sn, nil).Unpack(bg, layers)
			require.NoError(b, err)
			require.NoError(b, sn.Close())
		}
	})
	b.Run("skopeo", func(b *testing.B) {
		skopeo, err := exec.LookPath("skopeo")
		if err != nil {
			b.Skip("skopeo not installed (Debian package skopeo)")
		}
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			out := filepath.Join(b.TempDir(), "oci")
			cmd := exec.Command(skopeo, "copy", "--src-tls-verify=false", "docker://"+ref, "oci:"+out)
			if o, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("skopeo copy: %v\n%s", err, o)
			}
		}
	})
}
