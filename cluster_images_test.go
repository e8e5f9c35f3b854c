package podkit

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedOne seeds bin as demo/tool:1 into a registry on dir and waits.
func seedOne(t *testing.T, dir, bin string) *demoRegistry {
	t.Helper()
	r, err := newDemoRegistry(dir, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, r.Start())
	t.Cleanup(func() { _ = r.Close() })
	fi, err := os.Stat(bin)
	require.NoError(t, err)
	r.seed([]seedJob{{ref: "demo/tool:1", manifest: manifestPath("demo/tool", "1"), full: r.Addr() + "/demo/tool:1", bin: bin, fi: fi}})
	return r
}

func TestDemoRegistryHoldsManifestsUntilSeeded(t *testing.T) {
	dir, bin := t.TempDir(), filepath.Join(t.TempDir(), "tool")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/true\n"+string(make([]byte, 1<<20))), 0o755))
	r := seedOne(t, dir, bin)
	// Asked at once, the manifest is held until the push, never missing.
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, err := http.NewRequest(method, "http://"+r.Addr()+"/v2/demo/tool/manifests/1", nil)
		require.NoError(t, err)
		req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, method)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, r.wait(ctx))
	assert.FileExists(t, filepath.Join(dir, demoRecordFile))
}

func TestDemoRegistryPresent(t *testing.T) {
	content := []byte("#!/bin/true\nversion 1\n")
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, bin string)
		want   bool
	}{
		{"unchanged", func(*testing.T, string) {}, true},
		{"touched, same content", func(t *testing.T, bin string) {
			later := time.Now().Add(time.Hour)
			require.NoError(t, os.Chtimes(bin, later, later))
		}, true},
		{"new content, same size", func(t *testing.T, bin string) {
			require.NoError(t, os.WriteFile(bin, []byte("#!/bin/true\nversion 2\n"), 0o755))
			later := time.Now().Add(time.Hour)
			require.NoError(t, os.Chtimes(bin, later, later))
		}, false},
		{"other path", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, bin := t.TempDir(), filepath.Join(t.TempDir(), "tool")
			require.NoError(t, os.WriteFile(bin, content, 0o755))
			r := seedOne(t, dir, bin)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, r.wait(ctx))
			require.NoError(t, r.Close())

			// The next start on the same data dir.
			r2, err := newDemoRegistry(dir, slog.New(slog.DiscardHandler))
			require.NoError(t, err)
			defer r2.Close()
			path := bin
			if tc.change == nil {
				path = filepath.Join(t.TempDir(), "tool")
				require.NoError(t, os.WriteFile(path, content, 0o755))
			} else {
				tc.change(t, bin)
			}
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, tc.want, r2.present("demo/tool:1", "demo/tool", "1", path, fi))
		})
	}
}
