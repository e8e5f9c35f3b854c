package etcd_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
	"github.com/podkit/podkit/apiserver/storage/storagetest"
)

var prefixes atomic.Int64

// uniquePrefix keeps the stores of one test apart on a shared etcd.
func uniquePrefix(name string) string {
	return fmt.Sprintf("/%s-%d/registry", name, prefixes.Add(1))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openStore opens a store on c under a fresh prefix, closed in t.Cleanup.
func openStore(t testing.TB, c *etcdtest.Cluster, cfg etcd.Config, opts ...etcd.Option) *etcd.Store {
	t.Helper()
	cfg.Endpoints = c.Endpoints()
	if cfg.Prefix == "" {
		cfg.Prefix = uniquePrefix("test")
	}
	if cfg.Codec == nil {
		cfg.Codec = scheme.StorageCodec(scheme.New())
	}
	if cfg.TLS == nil {
		cfg.TLS = c.ClientTLS(t)
	}
	base := []etcd.Option{etcd.WithLogger(quiet()), etcd.WithCompactionInterval(0)}
	s, err := etcd.New(context.Background(), cfg, append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tuned(tune storagetest.Tuning) []etcd.Option {
	var opts []etcd.Option
	if tune.HistoryEvents > 0 {
		opts = append(opts, etcd.WithHistory(tune.HistoryEvents))
	}
	if tune.WatcherBuffer > 0 {
		opts = append(opts, etcd.WithWatcherBuffer(tune.WatcherBuffer))
	}
	if tune.BookmarkInterval > 0 {
		opts = append(opts, etcd.WithBookmarkInterval(tune.BookmarkInterval))
	}
	return opts
}

func TestConformance(t *testing.T) {
	c := etcdtest.Start(t)
	storagetest.RunConformance(t,
		func(t *testing.T) storage.Store { return openStore(t, c, etcd.Config{}) },
		storagetest.WithTuning(func(t *testing.T, tune storagetest.Tuning) storage.Store {
			return openStore(t, c, etcd.Config{}, tuned(tune)...)
		}))
}

func TestConformanceTLS(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithTLS())
	storagetest.RunConformance(t, func(t *testing.T) storage.Store { return openStore(t, c, etcd.Config{}) })
}

func codec() runtime.Codec { return scheme.StorageCodec(scheme.New()) }
