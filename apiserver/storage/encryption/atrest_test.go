package encryption_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
	"github.com/podkit/podkit/apiserver/storage/encryption"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

var secretsGR = schema.GroupResource{Resource: "secrets"}

var (
	_ etcd.Transformer  = (*encryption.Config)(nil)
	_ etcd.StaleChecker = (*encryption.Config)(nil)
)

func secret(name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Data:       map[string][]byte{"password": []byte(password)},
	}
}

func resourceOf(obj runtime.Object) (schema.GroupResource, bool) {
	switch obj.(type) {
	case *corev1.Secret:
		return secretsGR, true
	case *corev1.ConfigMap:
		return schema.GroupResource{Resource: "configmaps"}, true
	}
	return schema.GroupResource{}, false
}

func TestSecretsEncryptedInEtcd(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	cfg := mustConfig(t, configYAML(gcm("key1")))
	s, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), Codec: scheme.StorageCodec(scheme.New()), Transformer: cfg},
		etcd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	defer s.Close()

	key := storage.Key(secretsGR, "ns", "db")
	w, err := s.Watch(ctx, storage.Key(secretsGR, "ns", ""), storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	_, err = s.Create(ctx, key, secret("db", "hunter2"))
	require.NoError(t, err)
	cmKey := storage.Key(schema.GroupResource{Resource: "configmaps"}, "ns", "plain")
	_, err = s.Create(ctx, cmKey, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}, Data: map[string]string{"v": "visible"}})
	require.NoError(t, err)

	raw, err := c.Client(t).Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, raw.Kvs, 1)
	assert.True(t, strings.HasPrefix(string(raw.Kvs[0].Value), "k8s:enc:aesgcm:v1:key1:"))
	assert.NotContains(t, string(raw.Kvs[0].Value), "hunter2")
	rawCM, err := c.Client(t).Get(ctx, cmKey)
	require.NoError(t, err)
	assert.Contains(t, string(rawCM.Kvs[0].Value), "visible", "resources without a rule stay as they are")

	got, err := s.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "hunter2", string(got.(*corev1.Secret).Data["password"]))
	ev := <-w.ResultChan()
	assert.Equal(t, "hunter2", string(ev.Object.(*corev1.Secret).Data["password"]), "watchers see decrypted objects")
	list, err := s.List(ctx, storage.Key(secretsGR, "ns", ""), storage.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)

	// A value moved under another key is refused.
	_, err = c.Client(t).Put(ctx, storage.Key(secretsGR, "ns", "copy"), string(raw.Kvs[0].Value))
	require.NoError(t, err)
	_, err = s.Get(ctx, storage.Key(secretsGR, "ns", "copy"))
	require.ErrorIs(t, err, encryption.ErrDecrypt)
}

func TestSecretsEncryptedInBolt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	cfg := mustConfig(t, configYAML(gcm("key2", "key1")))
	codec := cfg.Codec(scheme.StorageCodec(scheme.New()), resourceOf)
	s, err := bolt.Open(path, codec)
	require.NoError(t, err)
	key := storage.Key(secretsGR, "ns", "db")
	_, err = s.Create(ctx, key, secret("db", "hunter2"))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	var raw []byte
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error {
			if v := b.Get([]byte(key)); v != nil {
				raw = append([]byte(nil), v...)
			}
			return nil
		})
	}))
	require.NoError(t, db.Close())
	require.NotNil(t, raw, "the secret is in the file")
	assert.True(t, strings.HasPrefix(string(raw), "k8s:enc:aesgcm:v1:key2:"))
	assert.NotContains(t, string(raw), "hunter2")

	// Reopened (a restart), the store decrypts what it loads.
	s, err = bolt.Open(path, codec)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "hunter2", string(got.(*corev1.Secret).Data["password"]))
}

// TestKeyRotationInEtcd rotates the key of stored secrets as Kubernetes
// documents it: the new key first in the configuration, every secret
// rewritten unchanged, then the old key removed.
func TestKeyRotationInEtcd(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	open := func(cfg *encryption.Config) *etcd.Store {
		s, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), Codec: scheme.StorageCodec(scheme.New()), Transformer: cfg},
			etcd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), etcd.WithCompactionInterval(0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	key := storage.Key(secretsGR, "ns", "db")
	raw := func() string {
		resp, err := c.Client(t).Get(ctx, key)
		require.NoError(t, err)
		require.Len(t, resp.Kvs, 1)
		return string(resp.Kvs[0].Value)
	}
	old := open(mustConfig(t, configYAML(gcm("key1"))))
	_, err := old.Create(ctx, key, secret("db", "hunter2"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(raw(), "k8s:enc:aesgcm:v1:key1:"))

	rotating := open(mustConfig(t, configYAML(gcm("key2", "key1"))))
	before := raw()
	_, err = rotating.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(raw(), "k8s:enc:aesgcm:v1:key2:"), "an unchanged object written with an old key is rewritten")
	assert.NotEqual(t, before, raw())
	again := raw()
	_, err = rotating.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
	require.NoError(t, err)
	assert.Equal(t, again, raw(), "an up-to-date object is not rewritten")

	rotated := open(mustConfig(t, configYAML(gcm("key2"))))
	got, err := rotated.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "hunter2", string(got.(*corev1.Secret).Data["password"]))
}
