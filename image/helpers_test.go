package image_test

import (
	"archive/tar"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
)

// testRegistry is the embedded registry on 127.0.0.1 with hooks to count
// blob downloads and to cut them mid-stream.
type testRegistry struct {
	srv      *httptest.Server
	host     string
	users    map[string]string
	blobGets atomic.Int64
	mu       sync.Mutex
	cut      map[string]bool // blob digests whose downloads break halfway
}

func newTestRegistry(t testing.TB, users map[string]string) *testRegistry {
	t.Helper()
	reg, err := registry.New(registry.Config{DataDir: t.TempDir(), Users: users})
	require.NoError(t, err)
	tr := &testRegistry{users: users, cut: map[string]bool{}}
	h := reg.Handler()
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			tr.blobGets.Add(1)
			d := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
			tr.mu.Lock()
			cut := tr.cut[d]
			tr.mu.Unlock()
			if cut {
				w = &cuttingWriter{ResponseWriter: w}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.host = strings.TrimPrefix(tr.srv.URL, "http://")
	return tr
}

// cuttingWriter aborts the connection after half the body.
type cuttingWriter struct {
	http.ResponseWriter
	n int
}

func (c *cuttingWriter) Write(b []byte) (int, error) {
	if c.n > 0 || len(b) > 64 {
		half := len(b) / 2
		_, _ = c.ResponseWriter.Write(b[:half])
		if f, ok := c.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	c.n += len(b)
	return c.ResponseWriter.Write(b)
}

func (tr *testRegistry) setCut(digest string, on bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.cut[digest] = on
}

func (tr *testRegistry) auth() authn.Authenticator {
	for u, p := range tr.users {
		return &authn.Basic{Username: u, Password: p}
	}
	return authn.Anonymous
}

// push uploads img as host/repo.
func (tr *testRegistry) push(t testing.TB, img v1.Image, repo string) string {
	t.Helper()
	ref, err := name.ParseReference(tr.host + "/" + repo)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithAuth(tr.auth())))
	return ref.String()
}

func (tr *testRegistry) pushIndex(t *testing.T, idx v1.ImageIndex, repo string) string {
	t.Helper()
	ref, err := name.ParseReference(tr.host + "/" + repo)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx, remote.WithAuth(tr.auth())))
	return ref.String()
}

// layeredImage is a three-layer image exercising whiteouts, opaque
// directories, hard links and symbolic links.
func layeredImage(t *testing.T) v1.Image {
	t.Helper()
	dir := func(n string) build.Entry { return build.Entry{Name: n, Type: tar.TypeDir} }
	file := func(n, body string) build.Entry { return build.Entry{Name: n, Body: []byte(body)} }
	l1, err := build.Layer([]build.Entry{
		dir("etc/"), file("etc/os-release", "base"), file("etc/remove-me", "x"),
		dir("app/"), dir("app/data/"), file("app/data/old", "old"), file("app/keep", "keep"),
		{Name: "bin/", Type: tar.TypeDir}, {Name: "bin/tool", Body: []byte("tool"), Mode: 0o755},
		{Name: "tool-link", Type: tar.TypeSymlink, Linkname: "bin/tool"},
	})
	require.NoError(t, err)
	l2, err := build.Layer([]build.Entry{
		file("etc/.wh.remove-me", ""),
		dir("app/data/"), file("app/data/.wh..wh..opq", ""), file("app/data/new", "new"),
		{Name: "bin/tool-hard", Type: tar.TypeLink, Linkname: "bin/tool"},
	})
	require.NoError(t, err)
	l3, err := build.Layer([]build.Entry{file("etc/os-release", "top")})
	require.NoError(t, err)
	img, err := build.Image([]v1.Layer{l1, l2, l3}, build.Config{Entrypoint: []string{"/bin/tool"}})
	require.NoError(t, err)
	return img
}

// singleImage is a small one-layer image whose content is marker.
func singleImage(t *testing.T, marker string) v1.Image {
	t.Helper()
	l, err := build.Layer([]build.Entry{{Name: "marker", Body: []byte(marker)}})
	require.NoError(t, err)
	img, err := build.Image([]v1.Layer{l}, build.Config{})
	require.NoError(t, err)
	return img
}

func newService(t *testing.T, cfg image.Config) *image.Service {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	s, err := image.New(cfg)
	require.NoError(t, err)
	return s
}

func secretKeyring(t *testing.T, host, user, pass string) *image.Keyring {
	t.Helper()
	k := image.NewKeyring()
	require.NoError(t, k.AddDockerConfigJSON([]byte(fmt.Sprintf(`{"auths":{%q:{"username":%q,"password":%q}}}`, host, user, pass))))
	return k
}

var bg = context.Background()
