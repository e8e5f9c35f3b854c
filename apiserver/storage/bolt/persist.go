package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bbolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/internal/engine"
	"github.com/podkit/podkit/apiserver/storage/internal/index"
)

var (
	bucketObjects = []byte("objects")
	bucketMeta    = []byte("meta")
	keyRevision   = []byte("revision")
	// bucketRevisions holds, for objects stored as encoded before their
	// revision was stamped, that revision (8 bytes, big-endian) under the
	// object's key. A write thereby stores the encoding made when the
	// object was canonicalized instead of encoding it a second time in the
	// commit. Objects without an entry carry their resourceVersion in
	// their own encoding (as every object did before this bucket existed).
	bucketRevisions = []byte("object-revisions")
)

// persister writes batches of changes to the bolt file.
type persister struct {
	db    *bbolt.DB
	codec runtime.Codec
}

var _ engine.Persister = (*persister)(nil)

// Persist writes one batch and the store's revision in one transaction;
// bbolt fsyncs it before returning.
func (p *persister) Persist(changes []engine.Change, rev uint64) error {
	return p.db.Update(func(tx *bbolt.Tx) error {
		objs, revs := tx.Bucket(bucketObjects), tx.Bucket(bucketRevisions)
		for _, c := range changes {
			k := []byte(c.Key)
			if err := revs.Delete(k); err != nil {
				return fmt.Errorf("deleting the revision of %q: %w", c.Key, err)
			}
			if c.Obj == nil {
				if err := objs.Delete(k); err != nil {
					return fmt.Errorf("deleting %q: %w", c.Key, err)
				}
				continue
			}
			v := c.Data
			if v != nil {
				if err := revs.Put(k, binary.BigEndian.AppendUint64(nil, c.Rev)); err != nil {
					return fmt.Errorf("writing the revision of %q: %w", c.Key, err)
				}
			} else {
				var buf bytes.Buffer
				if err := p.codec.Encode(c.Obj, &buf); err != nil {
					return fmt.Errorf("encoding %q: %w", c.Key, err)
				}
				v = buf.Bytes()
			}
			if err := objs.Put(k, v); err != nil {
				return fmt.Errorf("writing %q: %w", c.Key, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyRevision, binary.BigEndian.AppendUint64(nil, rev))
	})
}

// canonical round-trips obj through the codec, so the object kept in memory
// and handed back is exactly what a restart decodes from the file (empty
// TypeMeta, empty collections as nil), and objects the codec cannot encode
// are refused before they join a batch. The encoding is what the commit
// stores, beside the revision the engine stamps afterwards.
func (p *persister) canonical(obj runtime.Object) (runtime.Object, []byte, error) {
	var buf bytes.Buffer
	if err := p.codec.Encode(obj, &buf); err != nil {
		return nil, nil, err
	}
	data := buf.Bytes()
	out, _, err := p.codec.Decode(data, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return out, data, nil
}

// load creates the buckets when missing and returns the stored revision and
// every object.
func (p *persister) load() (uint64, []*index.Item, error) {
	err := p.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketObjects, bucketMeta, bucketRevisions} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	var (
		rev   uint64
		items []*index.Item
	)
	err = p.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyRevision); v != nil {
			if len(v) != 8 {
				return fmt.Errorf("stored revision has %d bytes, want 8", len(v))
			}
			rev = binary.BigEndian.Uint64(v)
		}
		revs := tx.Bucket(bucketRevisions)
		return tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
			obj, _, err := p.codec.Decode(v, nil, nil)
			if err != nil {
				return fmt.Errorf("decoding %q: %w", k, err)
			}
			if r := revs.Get(k); r != nil {
				if len(r) != 8 {
					return fmt.Errorf("key %q: stored revision has %d bytes, want 8", k, len(r))
				}
				if err := storage.SetRevision(obj, binary.BigEndian.Uint64(r)); err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
			}
			objRev, err := storage.Revision(obj)
			if err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			items = append(items, &index.Item{Key: string(k), Obj: obj, Rev: objRev})
			return nil
		})
	})
	return rev, items, err
}
