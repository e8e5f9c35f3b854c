package app

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

func encryptionConfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "encryption.yaml")
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	require.NoError(t, os.WriteFile(p, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
  - resources: [secrets]
    providers:
      - aesgcm:
          keys:
            - name: key1
              secret: `+key+`
      - identity: {}
`), 0o600))
	return p
}

var secrets = schema.GroupResource{Resource: "secrets"}

func TestOpenEtcdStoreWithTLSAndEncryption(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t, etcdtest.WithTLS())
	hostPort := strings.TrimPrefix(c.Members[0].ClientURL, "https://")
	st, err := OpenStore(Options{
		Store: StoreEtcdScheme + hostPort,
		Storage: StorageOptions{
			EtcdCAFile: c.TLS.CA, EtcdCertFile: c.TLS.ClientCert, EtcdKeyFile: c.TLS.ClientKey,
			EtcdPrefix: "/podkit", EncryptionProviderConfig: encryptionConfig(t),
			EtcdCompactionInterval: -1,
		},
	})
	require.NoError(t, err)
	defer st.Close()
	require.IsType(t, &etcd.Store{}, st)
	key := storage.Key(secrets, "ns", "s")
	_, err = st.Create(ctx, key, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("hunter2")}})
	require.NoError(t, err)
	raw, err := c.Client(t).Get(ctx, "/podkit/secrets/ns/s")
	require.NoError(t, err)
	require.Len(t, raw.Kvs, 1, "stored under --etcd-prefix")
	assert.True(t, strings.HasPrefix(string(raw.Kvs[0].Value), "k8s:enc:aesgcm:v1:key1:"))
	got, err := st.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "hunter2", string(got.(*corev1.Secret).Data["k"]))
}

func TestOpenStoreErrors(t *testing.T) {
	_, err := OpenStore(Options{Store: "etcd://"})
	assert.ErrorContains(t, err, "no etcd endpoint")
	_, err = OpenStore(Options{Store: "postgres"})
	assert.ErrorContains(t, err, "etcd://")
	_, err = OpenStore(Options{Store: StoreBolt, DataDir: t.TempDir(), Storage: StorageOptions{EncryptionProviderConfig: "/nonexistent"}})
	assert.Error(t, err)
}

func TestBoltStoreEncryptsSecrets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := OpenStore(Options{Store: StoreBolt, DataDir: dir, Storage: StorageOptions{EncryptionProviderConfig: encryptionConfig(t)}})
	require.NoError(t, err)
	_, err = st.Create(ctx, storage.Key(secrets, "ns", "s"), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("hunter2")}})
	require.NoError(t, err)
	_, err = st.Create(ctx, storage.Key(schema.GroupResource{Resource: "configmaps"}, "ns", "c"), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"k": "visible"}})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	data, err := os.ReadFile(filepath.Join(dir, "state.db"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "hunter2")
	assert.Contains(t, string(data), "k8s:enc:aesgcm:v1:key1:")
	assert.Contains(t, string(data), "visible", "configmaps are not encrypted")
}

func TestResourceByType(t *testing.T) {
	of := resourceByType(apiserver.DefaultResources())
	gr, ok := of(&corev1.Secret{})
	assert.True(t, ok)
	assert.Equal(t, secrets, gr)
	_, ok = of(&corev1.PodExecOptions{})
	assert.False(t, ok)
}

func TestConfigureAudit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := &apiserver.Config{}
	require.NoError(t, configureAudit(ctx, cfg, AuditOptions{}))
	assert.Nil(t, cfg.Audit, "off without a path")
	assert.Error(t, configureAudit(ctx, cfg, AuditOptions{Level: "Request"}), "a level needs a path")
	path := filepath.Join(t.TempDir(), "audit", "audit.log")
	assert.ErrorContains(t, configureAudit(ctx, cfg, AuditOptions{LogPath: path, Level: "Everything"}), "--audit-log-level")
	require.NoError(t, configureAudit(ctx, cfg, AuditOptions{LogPath: path, Level: "request"}))
	require.NotNil(t, cfg.Audit)
	assert.Equal(t, apiserver.AuditRequest, cfg.Audit.Policy)
	_, err := os.Stat(path)
	require.NoError(t, err, "the log file is created")

	policy := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600))
	require.NoError(t, configureAudit(ctx, cfg, AuditOptions{LogPath: path, PolicyFile: policy}))
	assert.IsType(t, &apiserver.AuditPolicyFile{}, cfg.Audit.Policy)
}
