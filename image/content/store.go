// Package content is the content-addressed blob store under the image
// store: blobs/sha256/<hex> holds verified blobs only. Writes go to
// ingest/ first and are renamed into place once their digest and size are
// checked, so a partial or corrupt download is never visible and a retry
// starts from a clean ingest file.
package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Sentinel errors.
var (
	// ErrNotFound reports a blob not in the store.
	ErrNotFound = errors.New("blob not found")
	// ErrDigestMismatch reports content whose digest or size differ from
	// the expected ones.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrUnsupportedDigest reports a digest algorithm other than sha256.
	ErrUnsupportedDigest = errors.New("unsupported digest algorithm")
)

// Store is a directory of blobs named by their sha256 digest.
type Store struct {
	root string
	// locks serialises writers of one digest: the second waits and then
	// finds the blob present.
	mu    sync.Mutex
	locks map[v1.Hash]*digestLock
}

type digestLock struct {
	ch chan struct{}
}

// Open opens (creating if needed) the store rooted at root and discards
// ingest files an interrupted process left behind.
func Open(root string) (*Store, error) {
	for _, d := range []string{"blobs/sha256", "ingest"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("creating content store: %w", err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "ingest"))
	if err != nil {
		return nil, fmt.Errorf("reading ingest area: %w", err)
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(root, "ingest", e.Name()))
	}
	return &Store{root: root, locks: map[v1.Hash]*digestLock{}}, nil
}

func check(h v1.Hash) error {
	if h.Algorithm != "sha256" {
		return fmt.Errorf("digest %s: %w", h, ErrUnsupportedDigest)
	}
	if len(h.Hex) != 64 || strings.Trim(h.Hex, "0123456789abcdef") != "" {
		return fmt.Errorf("malformed digest %s: %w", h, ErrUnsupportedDigest)
	}
	return nil
}

// Path returns where the blob h lives (whether or not it is present).
func (s *Store) Path(h v1.Hash) string {
	return filepath.Join(s.root, "blobs", h.Algorithm, h.Hex)
}

// Size returns the size of blob h, or ErrNotFound.
func (s *Store) Size(h v1.Hash) (int64, error) {
	if err := check(h); err != nil {
		return 0, err
	}
	fi, err := os.Stat(s.Path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("blob %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	return fi.Size(), nil
}

// Has reports whether blob h is present.
func (s *Store) Has(h v1.Hash) bool {
	_, err := s.Size(h)
	return err == nil
}

// Open opens blob h for reading.
func (s *Store) Open(h v1.Hash) (*os.File, error) {
	if err := check(h); err != nil {
		return nil, err
	}
	f, err := os.Open(s.Path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", h, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", h, err)
	}
	return f, nil
}

// ReadAll returns the content of the (small) blob h.
func (s *Store) ReadAll(h v1.Hash) ([]byte, error) {
	f, err := s.Open(h)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// lock takes the writer lock of h, waiting for another writer or ctx.
func (s *Store) lock(ctx context.Context, h v1.Hash) (func(), error) {
	for {
		s.mu.Lock()
		l, busy := s.locks[h]
		if !busy {
			l = &digestLock{ch: make(chan struct{})}
			s.locks[h] = l
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				delete(s.locks, h)
				s.mu.Unlock()
				close(l.ch)
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-l.ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Ingest writes the blob with digest h and size (-1 when unknown) from
// open, unless it is present already. open is called only when the blob
// must be fetched; the content is hashed while written to the ingest area
// and renamed into blobs/ only when digest and size match. Concurrent
// ingests of one digest in this process fetch it once. It returns whether
// this call wrote the blob.
func (s *Store) Ingest(ctx context.Context, h v1.Hash, size int64, open func() (io.ReadCloser, error)) (bool, error) {
	if err := check(h); err != nil {
		return false, err
	}
	if s.Has(h) {
		return false, nil
	}
	unlock, err := s.lock(ctx, h)
	if err != nil {
		return false, err
	}
	defer unlock()
	if s.Has(h) {
		return false, nil
	}
	rc, err := open()
	if err != nil {
		return false, err
	}
	defer rc.Close()
	if err := s.write(ctx, h, size, rc); err != nil {
		return false, err
	}
	return true, nil
}

// Put writes the blob with digest h from r (verified like Ingest).
func (s *Store) Put(ctx context.Context, h v1.Hash, size int64, r io.Reader) error {
	_, err := s.Ingest(ctx, h, size, func() (io.ReadCloser, error) { return io.NopCloser(r), nil })
	return err
}

func (s *Store) write(ctx context.Context, h v1.Hash, size int64, r io.Reader) (err error) {
	f, err := os.CreateTemp(filepath.Join(s.root, "ingest"), h.Algorithm+"-"+h.Hex+"-*")
	if err != nil {
		return fmt.Errorf("ingesting %s: %w", h, err)
	}
	ingest := f.Name()
	defer func() {
		if f != nil {
			_ = f.Close()
		}
		if err != nil {
			_ = os.Remove(ingest)
		}
	}()
	hasher := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, hasher), &ctxReader{ctx: ctx, r: r})
	if err != nil {
		return fmt.Errorf("ingesting %s after %d bytes: %w", h, n, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("blob %s: got %d bytes, want %d: %w", h, n, size, ErrDigestMismatch)
	}
	if got := hex.EncodeToString(hasher.Sum(nil)); got != h.Hex {
		return fmt.Errorf("blob %s: content has digest sha256:%s: %w", h, got, ErrDigestMismatch)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("ingesting %s: %w", h, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ingesting %s: %w", h, err)
	}
	f = nil
	// Blobs are read-only once verified.
	if err := os.Chmod(ingest, 0o400); err != nil {
		return fmt.Errorf("ingesting %s: %w", h, err)
	}
	if err := os.Rename(ingest, s.Path(h)); err != nil {
		return fmt.Errorf("committing blob %s: %w", h, err)
	}
	return syncDir(filepath.Dir(s.Path(h)))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete removes blob h; a missing blob is not an error.
func (s *Store) Delete(h v1.Hash) error {
	if err := check(h); err != nil {
		return err
	}
	if err := os.Remove(s.Path(h)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting blob %s: %w", h, err)
	}
	return nil
}

// Walk calls fn with the digest and size of every blob.
func (s *Store) Walk(fn func(h v1.Hash, size int64) error) error {
	entries, err := os.ReadDir(filepath.Join(s.root, "blobs", "sha256"))
	if err != nil {
		return fmt.Errorf("listing blobs: %w", err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := fn(v1.Hash{Algorithm: "sha256", Hex: e.Name()}, info.Size()); err != nil {
			return err
		}
	}
	return nil
}

// IngestEntries lists the names in the ingest area (for tests and
// diagnostics: it is empty between operations).
func (s *Store) IngestEntries() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.root, "ingest"))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
