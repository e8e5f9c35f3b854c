package app

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/encryption"
	"github.com/podkit/podkit/apiserver/storage/etcd"
)

// StoreEtcdScheme starts a --store value naming etcd members:
// etcd://host:port[,host:port...].
const StoreEtcdScheme = "etcd://"

// StorageOptions configure the etcd store and encryption at rest, with
// kube-apiserver's flag names.
type StorageOptions struct {
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connections to
	// etcd (--etcd-cafile, --etcd-certfile, --etcd-keyfile); with any of
	// them set the endpoints are reached over https.
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string
	// EtcdPrefix replaces /registry in every key (--etcd-prefix).
	EtcdPrefix string
	// EtcdCompactionInterval (--etcd-compaction-interval): 0 means the
	// default (5m, as kube-apiserver), a negative value disables it.
	EtcdCompactionInterval time.Duration
	// EncryptionProviderConfig is an EncryptionConfiguration file
	// (--encryption-provider-config) encrypting the resources it names
	// (Secrets usually) in the etcd and bolt stores.
	EncryptionProviderConfig string
	// Metrics registers the etcd store's request metrics
	// (etcd_request_duration_seconds, etcd_requests_total). New sets it to
	// the registry the API server serves at /metrics when nil; OpenStore
	// called alone registers none when nil.
	Metrics prometheus.Registerer
}

// AddStorageFlags registers the etcd and encryption flags.
func AddStorageFlags(fs *pflag.FlagSet, o *StorageOptions) {
	if o.EtcdPrefix == "" {
		o.EtcdPrefix = etcd.DefaultPrefix
	}
	if o.EtcdCompactionInterval == 0 {
		o.EtcdCompactionInterval = etcd.DefaultCompactionInterval
	}
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle verifying the etcd members (with --store etcd://...)")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "client certificate presented to etcd")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "key of --etcd-certfile")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "prefix of every key in etcd; clusters sharing an etcd need different prefixes")
	fs.DurationVar(&o.EtcdCompactionInterval, "etcd-compaction-interval", o.EtcdCompactionInterval, "how often etcd is compacted (coordinated between API servers); negative disables")
	fs.StringVar(&o.EncryptionProviderConfig, "encryption-provider-config", o.EncryptionProviderConfig, "EncryptionConfiguration file (apiserver.config.k8s.io/v1) encrypting resources such as secrets at rest (aesgcm, aescbc, identity)")
}

// IsEtcdStore reports whether a --store value names etcd.
func IsEtcdStore(store string) bool { return strings.HasPrefix(store, StoreEtcdScheme) }

// openEtcdStore connects to the etcd members of opts.Store.
func openEtcdStore(opts Options) (storage.Store, error) {
	so := opts.Storage
	useTLS := so.EtcdCAFile != "" || so.EtcdCertFile != "" || so.EtcdKeyFile != ""
	endpoints, err := etcd.ParseEndpoints(strings.TrimPrefix(opts.Store, StoreEtcdScheme), useTLS)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", opts.Store, err)
	}
	cfg := etcd.Config{Endpoints: endpoints, Prefix: so.EtcdPrefix, Codec: scheme.StorageCodec(scheme.New())}
	if useTLS {
		if cfg.TLS, err = etcd.LoadTLS(so.EtcdCAFile, so.EtcdCertFile, so.EtcdKeyFile); err != nil {
			return nil, err
		}
	}
	if so.EncryptionProviderConfig != "" {
		enc, err := encryption.LoadConfig(so.EncryptionProviderConfig)
		if err != nil {
			return nil, err
		}
		cfg.Transformer = enc
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	compaction := so.EtcdCompactionInterval
	switch {
	case compaction == 0:
		compaction = etcd.DefaultCompactionInterval
	case compaction < 0:
		compaction = 0
	}
	etcdOpts := []etcd.Option{etcd.WithLogger(log), etcd.WithCompactionInterval(compaction)}
	if so.Metrics != nil {
		etcdOpts = append(etcdOpts, etcd.WithMetrics(so.Metrics))
	}
	s, err := etcd.New(ctx, cfg, etcdOpts...)
	if err != nil {
		return nil, fmt.Errorf("opening etcd store at %v: %w", endpoints, err)
	}
	return s, nil
}

// storageCodec is the bolt store's codec: the storage codec, encrypting
// the resources --encryption-provider-config names.
func storageCodec(opts Options) (runtime.Codec, error) {
	sch := scheme.New()
	codec := scheme.StorageCodec(sch)
	if opts.Storage.EncryptionProviderConfig == "" {
		return codec, nil
	}
	enc, err := encryption.LoadConfig(opts.Storage.EncryptionProviderConfig)
	if err != nil {
		return nil, err
	}
	return enc.Codec(codec, resourceByType(apiserver.DefaultResources())), nil
}

// resourceByType names the resource of an object from its Go type.
func resourceByType(resources []*apiserver.Resource) func(runtime.Object) (schema.GroupResource, bool) {
	byType := map[reflect.Type]schema.GroupResource{}
	for _, r := range resources {
		if r.New == nil {
			continue
		}
		t := reflect.TypeOf(r.New())
		if _, dup := byType[t]; !dup { // events.k8s.io events are stored as core events
			byType[t] = r.GroupResource()
		}
	}
	return func(obj runtime.Object) (schema.GroupResource, bool) {
		gr, ok := byType[reflect.TypeOf(obj)]
		return gr, ok
	}
}
