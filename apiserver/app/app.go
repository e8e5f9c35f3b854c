package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/auth/pki"
	"github.com/podkit/podkit/apiserver/servicealloc"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/apiserver/validation"
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
	// ServiceClusterIPRange is the CIDR of Services' cluster IPs
	// (--service-cluster-ip-range); empty means 10.96.0.0/12.
	ServiceClusterIPRange string
	// ServiceNodePortRange is the range of node ports
	// (--service-node-port-range); a zero Size means 30000-32767.
	ServiceNodePortRange utilnet.PortRange
	// AdvertiseAddress is the address the `kubernetes` service's
	// endpoints name (--advertise-address); empty means BindAddress when
	// it is a specific address, else 127.0.0.1.
	AdvertiseAddress string
	// Secure are the TLS and authentication settings; the zero value is
	// secure (see SecureOptions).
	Secure SecureOptions
	// Authorization are the authorizer and admission plugin settings; the
	// zero value is Node,RBAC (AlwaysAllow when Secure.Insecure) and
	// Kubernetes' default admission plugins plus NodeRestriction.
	Authorization AuthorizationOptions
	// Storage configures the etcd store (--store etcd://...) and
	// encryption at rest (storage.go).
	Storage StorageOptions
	// Audit configures the audit log (audit.go).
	Audit AuditOptions

	Logger *slog.Logger
	// Configure, when set, may change the server configuration (swap a
	// stage) before the server is built.
	Configure func(*apiserver.Config) error
}

// DefaultOptions are the flags' defaults.
func DefaultOptions() Options {
	return Options{DataDir: "/var/lib/podkit", Store: StoreBolt, BindAddress: "127.0.0.1", Port: 6443,
		ServiceClusterIPRange: servicealloc.DefaultClusterIPRange.String(), ServiceNodePortRange: servicealloc.DefaultNodePortRange}
}

// APIServer is a running (listening) API server.
type APIServer struct {
	Server   *apiserver.Server
	Store    storage.Store
	Listener net.Listener
	// URL is the base URL clients use.
	URL string
	// PKI is the cluster's PKI (nil with Secure.Insecure): the CA, the
	// admin certificate, and EnsureNode for kubelets' certificates.
	PKI *pki.Cluster
	log *slog.Logger
}

// OpenStore opens the store named by opts.
func OpenStore(opts Options) (storage.Store, error) {
	if IsEtcdStore(opts.Store) {
		return openEtcdStore(opts)
	}
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
		codec, err := storageCodec(opts)
		if err != nil {
			return nil, err
		}
		s, err := bolt.Open(filepath.Join(opts.DataDir, "state.db"), codec, bolt.WithLockTimeout(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("opening bolt store in %s: %w", opts.DataDir, err)
		}
		return s, nil
	default:
		return nil, fmt.Errorf("unknown store %q: want %s, %s or %shost:port[,host:port]", opts.Store, StoreBolt, StoreMemory, StoreEtcdScheme)
	}
}

// New opens the store, starts listening, builds and bootstraps the server
// (the `kubernetes` service targets the port listened on) and writes the
// kubeconfig. Serve with Run.
func New(ctx context.Context, opts Options) (*APIServer, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	services, err := serviceOptions(opts)
	if err != nil {
		return nil, err
	}
	// One registry for the server's and the store's metrics, served at
	// /metrics (unless the caller registers the store's elsewhere).
	var registry *prometheus.Registry
	if opts.Storage.Metrics == nil {
		registry = prometheus.NewRegistry()
		opts.Storage.Metrics = registry
	}
	st, err := OpenStore(opts)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.Port)))
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("listening: %w", err)
	}
	fail := func(err error) (*APIServer, error) {
		_ = l.Close()
		_ = st.Close()
		return nil, err
	}
	cfg, err := defaultConfig(st, opts.Logger, !opts.Secure.Insecure)
	if err != nil {
		return fail(err)
	}
	if registry != nil {
		cfg.Metrics = registry
	}
	if err := services(cfg); err != nil {
		return fail(err)
	}
	cfg.AdvertisePort = l.Addr().(*net.TCPAddr).Port
	var sec *security
	if !opts.Secure.Insecure {
		if sec, err = newSecurity(opts.Secure, opts.DataDir, servingHosts(opts), st); err != nil {
			return fail(err)
		}
		cfg.Authenticator, cfg.TokenReviewer, cfg.ServiceAccountIssuer = sec.authn, sec.tokens, sec.issuer
		cfg.KubeletClient, cfg.RootCA = apiserver.TLSKubeletClient(sec.kubeletTLS), sec.pki.CA.CertPEM
		l = tls.NewListener(l, sec.tls)
	}
	if err := configureAuthorization(cfg, st, opts); err != nil {
		return fail(err)
	}
	if err := configureAudit(ctx, cfg, opts.Audit); err != nil {
		return fail(err)
	}
	if opts.Configure != nil {
		if err := opts.Configure(cfg); err != nil {
			return fail(err)
		}
	}
	srv, err := apiserver.New(*cfg)
	if err != nil {
		return fail(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		return fail(err)
	}
	host := opts.BindAddress
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	scheme := "https://"
	if sec == nil {
		scheme = "http://"
	}
	url := scheme + net.JoinHostPort(host, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	if opts.KubeconfigPath != "" {
		if sec == nil {
			err = WriteKubeconfig(opts.KubeconfigPath, url, "podkit")
		} else {
			err = WriteKubeconfigFor(opts.KubeconfigPath, url, "podkit", Credentials{CA: sec.pki.CA.CertPEM,
				ClientCert: sec.pki.Admin.CertPEM, ClientKey: sec.pki.Admin.KeyPEM})
		}
		if err != nil {
			return fail(err)
		}
	}
	a := &APIServer{Server: srv, Store: st, Listener: l, URL: url, log: opts.Logger}
	if sec != nil {
		a.PKI = sec.pki
	}
	return a, nil
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

// serviceOptions checks the Service flags and returns what they set in the
// server configuration: the ranges, the advertise address, and a Validator
// checking node ports against the range.
func serviceOptions(opts Options) (func(*apiserver.Config) error, error) {
	var cidr netip.Prefix
	if opts.ServiceClusterIPRange != "" {
		p, err := netip.ParsePrefix(opts.ServiceClusterIPRange)
		if err != nil {
			return nil, fmt.Errorf("--service-cluster-ip-range %q: %w", opts.ServiceClusterIPRange, err)
		}
		cidr = p
	}
	var advertise netip.Addr
	if opts.AdvertiseAddress != "" {
		a, err := netip.ParseAddr(opts.AdvertiseAddress)
		if err != nil {
			return nil, fmt.Errorf("--advertise-address %q: %w", opts.AdvertiseAddress, err)
		}
		advertise = a
	} else if a, err := netip.ParseAddr(opts.BindAddress); err == nil && !a.IsUnspecified() {
		advertise = a
	}
	ports := opts.ServiceNodePortRange
	return func(cfg *apiserver.Config) error {
		cfg.ServiceClusterIPRange, cfg.ServiceNodePortRange, cfg.AdvertiseAddress = cidr, ports, advertise
		if ports.Size != 0 {
			v, err := validation.New(validation.WithNodePortRange(ports.Base, ports.Size))
			if err != nil {
				return fmt.Errorf("--service-node-port-range %s: %w", ports, err)
			}
			cfg.Validator = v
		}
		return nil
	}, nil
}
