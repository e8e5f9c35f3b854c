package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

// TestEtcdMetricsServed: an API server on etcd serves the store's request
// metrics at /metrics next to its own.
func TestEtcdMetricsServed(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithTLS())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := New(ctx, Options{
		Store: StoreEtcdScheme + strings.TrimPrefix(c.Members[0].ClientURL, "https://"),
		Storage: StorageOptions{EtcdCAFile: c.TLS.CA, EtcdCertFile: c.TLS.ClientCert, EtcdKeyFile: c.TLS.ClientKey,
			EtcdPrefix: "/metrics-test", EtcdCompactionInterval: -1},
		BindAddress: "127.0.0.1", Secure: SecureOptions{Insecure: true},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var body string
	require.Eventually(t, func() bool {
		if resp, err := http.Get(srv.URL + "/api/v1/namespaces"); err == nil {
			resp.Body.Close()
		}
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK && strings.Contains(body, "etcd_requests_total") &&
			strings.Contains(body, "apiserver_request_total")
	}, 30*time.Second, 50*time.Millisecond, "no etcd and apiserver metrics at /metrics")
	assert.Contains(t, body, "etcd_request_duration_seconds_bucket")
	assert.Contains(t, body, `etcd_requests_total{operation="create",type="namespaces"}`, "Bootstrap's creates are counted")
	assert.Contains(t, body, `etcd_requests_total{operation="list",type="namespaces"}`, "requests through the server are counted")
}
