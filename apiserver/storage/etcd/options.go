package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

// Defaults.
const (
	DefaultPrefix             = "/registry"
	DefaultDialTimeout        = 5 * time.Second
	DefaultRequestTimeout     = 30 * time.Second
	DefaultCompactionInterval = 5 * time.Minute
	// DefaultCatchUpTimeout bounds how long a watch waits for the cache to
	// reach the revision it starts from.
	DefaultCatchUpTimeout = 3 * time.Second
)

// Config holds what a Store needs.
type Config struct {
	// Endpoints are the client URLs of the etcd members
	// (http://127.0.0.1:2379, https://...); the client balances and
	// fails over between them.
	Endpoints []string
	// TLS, when set, is used for every connection (client certificate and
	// CA); see LoadTLS.
	TLS *tls.Config
	// Prefix replaces "/registry" at the start of every storage key;
	// default DefaultPrefix. Several clusters can share one etcd with
	// different prefixes.
	Prefix string
	// Codec encodes objects (scheme.StorageCodec).
	Codec runtime.Codec
	// Transformer, when set, transforms values on their way to and from
	// etcd (encryption at rest).
	Transformer Transformer
}

// Transformer changes stored values on their way to and from etcd, like
// kube-apiserver's value transformers. key is the storage key
// (/registry/...): implementations pick the resource's settings with it and
// authenticate it with the value.
type Transformer interface {
	TransformToStorage(ctx context.Context, data []byte, key string) ([]byte, error)
	TransformFromStorage(ctx context.Context, data []byte, key string) ([]byte, error)
}

// StaleChecker is implemented by Transformers whose stored values can be
// out of date (encrypted with a key other than the one new writes use, or
// not encrypted): Update then writes such a value even when the object is
// unchanged, so that re-writing every object (kubectl replace) completes a
// key rotation, as in Kubernetes.
type StaleChecker interface {
	Stale(data []byte, key string) bool
}

// Option tunes a Store.
type Option func(*options) error

type options struct {
	dialTimeout        time.Duration
	requestTimeout     time.Duration
	compactionInterval time.Duration
	catchUp            time.Duration
	cache              []watchcache.Option
	logger             *slog.Logger
	registerer         prometheus.Registerer
}

func defaultOptions() options {
	return options{
		dialTimeout:        DefaultDialTimeout,
		requestTimeout:     DefaultRequestTimeout,
		compactionInterval: DefaultCompactionInterval,
		catchUp:            DefaultCatchUpTimeout,
		logger:             slog.Default(),
	}
}

// WithDialTimeout bounds the first connection to etcd (default 5s).
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("dial timeout %s: must be positive", d)
		}
		o.dialTimeout = d
		return nil
	}
}

// WithRequestTimeout bounds every etcd request, including the retries the
// client makes while it fails over (default 30s).
func WithRequestTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("request timeout %s: must be positive", d)
		}
		o.requestTimeout = d
		return nil
	}
}

// WithCompactionInterval sets how often the store compacts etcd to the
// revision it saw one interval earlier (default 5m, as kube-apiserver's
// --etcd-compaction-interval); 0 disables compaction by this store.
func WithCompactionInterval(d time.Duration) Option {
	return func(o *options) error {
		if d < 0 {
			return fmt.Errorf("compaction interval %s: must not be negative", d)
		}
		o.compactionInterval = d
		return nil
	}
}

// WithCatchUpTimeout bounds how long a watch waits for the store's watch
// cache to reach the revision it starts from (default 3s); past it the
// watch starts anyway and skips the events up to that revision as they
// arrive.
func WithCatchUpTimeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("catch-up timeout %s: must be positive", d)
		}
		o.catchUp = d
		return nil
	}
}

// WithHistory sets how many recent events the watch cache keeps for
// watches that start in the past (default 10,000); older starts fail with
// storage.ErrGone.
func WithHistory(events int) Option { return withCache(watchcache.WithCapacity(events)) }

// WithWatcherBuffer sets how many events a watcher may have pending before
// it is dropped (default 10,000, watchcache.DefaultWatcherBuffer).
func WithWatcherBuffer(events int) Option { return withCache(watchcache.WithWatcherBuffer(events)) }

// WithBookmarkInterval sets how often watchers asking for bookmarks get one
// (default 5s).
func WithBookmarkInterval(d time.Duration) Option {
	return withCache(watchcache.WithBookmarkInterval(d))
}

func withCache(opt watchcache.Option) Option {
	return func(o *options) error {
		o.cache = append(o.cache, opt)
		return nil
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("logger: nil")
		}
		o.logger = l
		o.cache = append(o.cache, watchcache.WithLogger(l))
		return nil
	}
}

// WithMetrics registers the store's metrics (etcd_request_duration_seconds,
// etcd_requests_total, as kube-apiserver names them) with r.
func WithMetrics(r prometheus.Registerer) Option {
	return func(o *options) error {
		o.registerer = r
		return nil
	}
}

// LoadTLS builds the client TLS configuration from PEM files, as
// kube-apiserver's --etcd-cafile, --etcd-certfile and --etcd-keyfile: the
// CA verifying the members (system roots when empty) and the client
// certificate (none when both are empty).
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("etcd client certificate: both a certificate and a key file are needed")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA %s: no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ParseEndpoints turns the host:port list of --store etcd://h1:p1,h2:p2
// (or full URLs) into client URLs; https is used when useTLS is set.
func ParseEndpoints(list string, useTLS bool) ([]string, error) {
	scheme := "http://"
	if useTLS {
		scheme = "https://"
	}
	var out []string
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = scheme + e
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no etcd endpoint in %q", list)
	}
	return out, nil
}
