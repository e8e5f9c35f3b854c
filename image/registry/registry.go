// Package registry is podkit's embedded OCI registry: go-containerregistry's
// registry with blobs and manifests kept on disk, optional basic auth and
// TLS, listening on 127.0.0.1 by default. Tests and the demo push images to
// it so that nothing needs the internet (`podkit registry`).
package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/podkit/podkit/image/content"
)

// ErrInvalidConfig reports a bad Config.
var ErrInvalidConfig = errors.New("invalid registry configuration")

// DefaultAddr is where the registry listens unless told otherwise.
const DefaultAddr = "127.0.0.1:5000"

// Config configures a Server.
type Config struct {
	// DataDir holds blobs/ and manifests/. Required.
	DataDir string
	// Addr to listen on; "127.0.0.1:0" picks a free port.
	Addr string
	// Users, when set, requires HTTP basic auth with one of these
	// user/password pairs for every request.
	Users map[string]string
	// TLS, when set, serves HTTPS.
	TLS *tls.Config
	// Log receives one line per request at debug level.
	Log *slog.Logger
	// Front, when set, wraps the registry API for what Start serves (not
	// for Handler): a gate or filter in front of the network listener
	// that in-process clients bypass.
	Front func(api http.Handler) http.Handler
}

// Server is a running registry.
type Server struct {
	cfg     Config
	handler http.Handler
	srv     *http.Server
	ln      net.Listener
	mu      sync.Mutex
	done    chan error
}

// New makes a registry over cfg.DataDir, replaying the manifests stored
// there, without listening yet (see Start, or use Handler).
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("data directory required: %w", ErrInvalidConfig)
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	blobs, err := content.Open(filepath.Join(cfg.DataDir, "blobs"))
	if err != nil {
		return nil, err
	}
	manifests := filepath.Join(cfg.DataDir, "manifests")
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		return nil, fmt.Errorf("creating manifest directory: %w", err)
	}
	logger := log.New(&slogWriter{log: cfg.Log}, "", 0)
	inner := ggcrregistry.New(ggcrregistry.Logger(logger), ggcrregistry.WithBlobHandler(&blobHandler{store: blobs}))
	p := &persister{dir: manifests, next: inner}
	if err := p.replay(); err != nil {
		return nil, err
	}
	var h http.Handler = p
	if len(cfg.Users) > 0 {
		h = &basicAuth{users: cfg.Users, next: h}
	}
	return &Server{cfg: cfg, handler: h}, nil
}

// Handler serves the registry API (for httptest servers).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on cfg.Addr and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("registry listening on %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	h := s.handler
	if s.cfg.Front != nil {
		h = s.cfg.Front(h)
	}
	s.mu.Lock()
	s.ln = ln
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	s.done = make(chan error, 1)
	srv := s.srv
	s.mu.Unlock()
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return nil
}

// Addr is the host:port the registry listens on (after Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the server; idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
	return <-s.done
}

// Run serves until ctx is done: the body of `podkit registry`.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	cfg.Log.InfoContext(ctx, "registry listening", "addr", s.Addr(), "data", cfg.DataDir)
	select {
	case <-ctx.Done():
		return s.Close()
	case err := <-s.done:
		return err
	}
}

// blobHandler stores blobs in a content store: verified on write, served
// without rehashing.
type blobHandler struct{ store *content.Store }

func (b *blobHandler) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	n, err := b.store.Size(h)
	if err != nil {
		return 0, ggcrregistry.ErrNotFound
	}
	return n, nil
}

func (b *blobHandler) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := b.store.Open(h)
	if err != nil {
		return nil, ggcrregistry.ErrNotFound
	}
	return f, nil
}

func (b *blobHandler) Put(ctx context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	return b.store.Put(ctx, h, -1, rc)
}

func (b *blobHandler) Delete(_ context.Context, _ string, h v1.Hash) error {
	if !b.store.Has(h) {
		return ggcrregistry.ErrNotFound
	}
	return b.store.Delete(h)
}

// persister records every manifest PUT (and DELETE) on disk and replays
// them at start, since the upstream registry keeps manifests in memory.
type persister struct {
	dir  string
	next http.Handler
	mu   sync.Mutex
}

type savedManifest struct {
	Path        string `json:"path"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
	Seq         int64  `json:"seq"`
}

func (p *persister) file(urlPath string) string {
	sum := sha256.Sum256([]byte(urlPath))
	return filepath.Join(p.dir, hex.EncodeToString(sum[:])+".json")
}

func isManifestPath(path string) bool {
	return strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/manifests/")
}

func (p *persister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isManifestPath(r.URL.Path) || (r.Method != http.MethodPut && r.Method != http.MethodDelete) {
		p.next.ServeHTTP(w, r)
		return
	}
	var body []byte
	if r.Method == http.MethodPut {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	// The upstream handler's answer is held until the manifest is on disk:
	// a client that saw 201 must find the manifest after a restart, even
	// when it reads the response before the handler has returned (an
	// in-process transport streams it as it is written).
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	defer func() {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}()
	if rec.Code >= 300 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method == http.MethodDelete {
		_ = os.Remove(p.file(r.URL.Path))
		return
	}
	m := savedManifest{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: body, Seq: time.Now().UnixNano()}
	b, err := json.Marshal(m)
	if err == nil {
		tmp := p.file(r.URL.Path) + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, p.file(r.URL.Path))
		}
	}
	if err != nil {
		// Not acknowledged: the client retries rather than trusting a
		// manifest that would be gone after a restart.
		log.Printf("registry: persisting manifest %s: %v", r.URL.Path, err)
		rec = httptest.NewRecorder()
		http.Error(rec, "persisting manifest: "+err.Error(), http.StatusInternalServerError)
	}
}

// replay feeds the stored manifests back, oldest first, so tags end up
// pointing where they last pointed.
func (p *persister) replay() error {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("reading manifests: %w", err)
	}
	var saved []savedManifest
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(p.dir, e.Name()))
		if err != nil {
			return fmt.Errorf("reading manifest: %w", err)
		}
		var m savedManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("decoding manifest %s: %w", e.Name(), err)
		}
		saved = append(saved, m)
	}
	// Oldest first; digests before tags at equal times.
	for i := range saved {
		for j := i + 1; j < len(saved); j++ {
			if saved[j].Seq < saved[i].Seq {
				saved[i], saved[j] = saved[j], saved[i]
			}
		}
	}
	for _, m := range saved {
		req := httptest.NewRequest(http.MethodPut, m.Path, bytes.NewReader(m.Body))
		req.Header.Set("Content-Type", m.ContentType)
		rec := httptest.NewRecorder()
		p.next.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			return fmt.Errorf("restoring manifest %s: %d %s", m.Path, rec.Code, rec.Body.String())
		}
	}
	return nil
}

// basicAuth requires HTTP basic credentials, answering 401 with a
// challenge like the distribution registry does.
type basicAuth struct {
	users map[string]string
	next  http.Handler
}

func (b *basicAuth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if ok {
		if want, known := b.users[user]; known && subtle.ConstantTimeCompare([]byte(want), []byte(pass)) == 1 {
			b.next.ServeHTTP(w, r)
			return
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="podkit-registry"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}`)
}

// slogWriter adapts the upstream *log.Logger to slog at debug level.
type slogWriter struct{ log *slog.Logger }

func (s *slogWriter) Write(p []byte) (int, error) {
	s.log.Debug("registry", "request", strings.TrimSpace(string(p)))
	return len(p), nil
}
