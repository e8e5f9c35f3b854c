package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// Store backends.
const (
	StoreBolt   = "bolt"
	StoreMemory = "memory"
)

// Options configure an API server process.
type Options struct {
	// DataDir holds the bbolt database (state.db).
	DataDir string
	// Store is StoreBolt (default) or StoreMemory.
	Store string
	// BindAddress and Port to listen on; Port 0 picks a free port.
	BindAddress string
	Port        int
	// KubeconfigPath, when set, receives a kubeconfig for the server.
	KubeconfigPath string
	Logger         *slog.Logger
	// Configure, when set, may change the server configuration (swap a
	// stage) before the server is built.
	Configure func(*apiserver.Config) error
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{DataDir: "/var/lib/podkit", Store: StoreBolt, BindAddress: "127.0.0.1", Port: 6443}
}

// APIServer is a running (listening) API server.
type APIServer struct {
	Server   *apiserver.Server
	Store    storage.Store
	Listener net.Listener
	// URL is the base URL clients use.
	URL string
	log *slog.Logger
}

// OpenStore opens the store named by opts.
func OpenStore(opts Options) (storage.Store, error) {
	switch opts.Store {
	case StoreMemory:
		return memory.New(), nil
	case StoreBolt, "":
		if opts.DataDir == "" {
			return nil, errors.New("a --data-dir is required for the bolt store")
		}
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating data dir: %w", err)
		}
		s, err := bolt.Open(filepath.Join(opts.DataDir, "state.db"), scheme.StorageCodec(scheme.New()), bolt.WithLockTimeout(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("opening bolt store in %s: %w", opts.DataDir, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("unknown store %q: want %s or %s", opts.Store, StoreBolt, StoreMemory)
	}
}

// New opens the store, builds and bootstraps the server, starts listening
// and writes the kubeconfig. Serve with Run.
func New(ctx context.Context, opts Options) (*APIServer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	st, err := OpenStore(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := DefaultConfig(st, opts.Logger)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if opts.Configure != nil {
		if err := opts.Configure(cfg); err != nil {
			_ = st.Close()
			return nil, err
		}
	}
	srv, err := apiserver.New(*cfg)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := srv.Bootstrap(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.Port)))
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("listening: %w", err)
	}
	host := opts.BindAddress
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	if opts.KubeconfigPath != "" {
		if err := WriteKubeconfig(opts.KubeconfigPath, url, "podkit"); err != nil {
			_ = l.Close()
			_ = st.Close()
			return nil, err
		}
	}
	return &APIServer{Server: srv, Store: st, Listener: l, URL: url, log: opts.Logger}, nil
}

// Run serves until ctx is done, then closes the store.
func (a *APIServer) Run(ctx context.Context) error {
	err := a.Server.Serve(ctx, a.Listener)
	if cerr := a.Store.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
