package registry_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image/registry"
)

// ackWatcher is a ResponseWriter that notes, when a manifest PUT's status
// goes out, how many manifests are on disk.
type ackWatcher struct {
	http.ResponseWriter
	dir     string
	onDisk  int
	checked bool
}

func (a *ackWatcher) WriteHeader(code int) {
	if !a.checked {
		a.checked = true
		ents, _ := os.ReadDir(filepath.Join(a.dir, "manifests"))
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".json" {
				a.onDisk++
			}
		}
	}
	a.ResponseWriter.WriteHeader(code)
}

// A manifest PUT is acknowledged only once the manifest is on disk: a
// client reading the 201 early (an in-process transport streams the
// response as it is written) still finds it after a restart.
func TestManifestOnDiskBeforeAcknowledged(t *testing.T) {
	dir := t.TempDir()
	s, err := registry.New(registry.Config{DataDir: dir, Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	var watched []*ackWatcher
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && filepath.Base(filepath.Dir(r.URL.Path)) == "manifests" {
			a := &ackWatcher{ResponseWriter: w, dir: dir}
			watched = append(watched, a)
			w = a
		}
		s.Handler().ServeHTTP(w, r)
	})
	hs := httptest.NewServer(h)
	defer hs.Close()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	ref, err := name.ParseReference(hs.Listener.Addr().String() + "/demo/app:v1")
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))
	require.Len(t, watched, 1)
	assert.True(t, watched[0].checked)
	assert.Equal(t, 1, watched[0].onDisk, "the manifest was on disk when the 201 went out")
}
