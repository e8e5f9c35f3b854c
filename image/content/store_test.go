package content_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image/content"
)

func digest(b []byte) v1.Hash {
	s := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(s[:])}
}

func TestIngestVerifies(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := content.Open(root)
	require.NoError(t, err)
	data := []byte("hello blob")
	h := digest(data)

	err = s.Put(ctx, h, int64(len(data)), bytes.NewReader([]byte("tampered!!")))
	assert.ErrorIs(t, err, content.ErrDigestMismatch)
	err = s.Put(ctx, h, 3, bytes.NewReader(data))
	assert.ErrorIs(t, err, content.ErrDigestMismatch)
	assert.False(t, s.Has(h))
	entries, err := s.IngestEntries()
	require.NoError(t, err)
	assert.Empty(t, entries, "failed ingests leave nothing")

	require.NoError(t, s.Put(ctx, h, int64(len(data)), bytes.NewReader(data)))
	got, err := s.ReadAll(h)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	_, err = os.Stat(filepath.Join(root, "blobs", "sha256", h.Hex))
	assert.NoError(t, err)

	n := 0
	require.NoError(t, s.Walk(func(v1.Hash, int64) error { n++; return nil }))
	assert.Equal(t, 1, n)
	require.NoError(t, s.Delete(h))
	require.NoError(t, s.Delete(h), "idempotent")
	_, err = s.Open(h)
	assert.ErrorIs(t, err, content.ErrNotFound)
	_, err = s.Size(v1.Hash{Algorithm: "md5", Hex: "00"})
	assert.ErrorIs(t, err, content.ErrUnsupportedDigest)
}

func TestIngestFailsMidStream(t *testing.T) {
	ctx := context.Background()
	s, err := content.Open(t.TempDir())
	require.NoError(t, err)
	data := bytes.Repeat([]byte("x"), 1<<20)
	h := digest(data)
	boom := errors.New("connection reset")
	_, err = s.Ingest(ctx, h, int64(len(data)), func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(bytes.NewReader(data[:1000]), &failReader{err: boom})), nil
	})
	assert.ErrorIs(t, err, boom)
	assert.False(t, s.Has(h))
	entries, _ := s.IngestEntries()
	assert.Empty(t, entries)
	wrote, err := s.Ingest(ctx, h, int64(len(data)), func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	require.NoError(t, err)
	assert.True(t, wrote, "a retry starts clean")
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

func TestIngestConcurrentOnce(t *testing.T) {
	ctx := context.Background()
	s, err := content.Open(t.TempDir())
	require.NoError(t, err)
	data := bytes.Repeat([]byte("y"), 1<<20)
	h := digest(data)
	var opens atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Ingest(ctx, h, int64(len(data)), func() (io.ReadCloser, error) {
				opens.Add(1)
				return io.NopCloser(bytes.NewReader(data)), nil
			})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), opens.Load())
}

func TestOpenDiscardsStaleIngest(t *testing.T) {
	root := t.TempDir()
	_, err := content.Open(root)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "ingest", "sha256-partial"), []byte("half"), 0o600))
	s, err := content.Open(root)
	require.NoError(t, err)
	entries, err := s.IngestEntries()
	require.NoError(t, err)
	assert.Empty(t, entries)
}
