package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
)

// TestReadsObjectsWithEmbeddedRevision: a file whose objects carry their
// resourceVersion in their own encoding (every object, before revisions
// were kept beside the bytes) loads, and writes after it mix both forms.
func TestReadsObjectsWithEmbeddedRevision(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "podkit.db")
	legacy := pod("old")
	legacy.ResourceVersion = "5"
	var buf bytes.Buffer
	require.NoError(t, codec().Encode(legacy, &buf))
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		objs, err := tx.CreateBucket([]byte("objects"))
		if err != nil {
			return err
		}
		meta, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		if err := objs.Put([]byte(storage.Key(pods, "ns", "old")), buf.Bytes()); err != nil {
			return err
		}
		return meta.Put([]byte("revision"), binary.BigEndian.AppendUint64(nil, 5))
	}))
	require.NoError(t, db.Close())

	s, err := bolt.Open(path, codec(), quiet())
	require.NoError(t, err)
	got, err := s.Get(ctx, storage.Key(pods, "ns", "old"))
	require.NoError(t, err)
	assert.Equal(t, "5", got.(*corev1.Pod).ResourceVersion)
	_, err = s.Create(ctx, storage.Key(pods, "ns", "new"), pod("new"))
	require.NoError(t, err)
	_, err = s.Update(ctx, storage.Key(pods, "ns", "old"), func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Spec.NodeName = "node-1"
		return cur, nil
	})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = open(t, path)
	for name, rv := range map[string]string{"new": "6", "old": "7"} {
		got, err := s.Get(ctx, storage.Key(pods, "ns", name))
		require.NoError(t, err)
		assert.Equal(t, rv, got.(*corev1.Pod).ResourceVersion, name)
	}
	_, err = s.Delete(ctx, storage.Key(pods, "ns", "old"), nil)
	require.NoError(t, err)
	_, err = s.Create(ctx, storage.Key(pods, "ns", "old"), pod("old"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	s = open(t, path)
	got, err = s.Get(ctx, storage.Key(pods, "ns", "old"))
	require.NoError(t, err)
	assert.Equal(t, "9", got.(*corev1.Pod).ResourceVersion, "a recreated key gets its new revision")
}
