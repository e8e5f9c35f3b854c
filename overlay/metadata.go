package overlay

import (
	"encoding/json"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// bucketSnapshots maps a snapshot key to its JSON record.
var bucketSnapshots = []byte("snapshots")

// record is the persisted form of a snapshot.
type record struct {
	ID      uint64    `json:"id"`
	Kind    Kind      `json:"kind"`
	Parent  string    `json:"parent,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Usage is measured when the snapshot is committed.
	Usage *Usage `json:"usage,omitempty"`
}

func (r *record) info(key string) Info {
	return Info{Kind: r.Kind, Name: key, Parent: r.Parent, Created: r.Created, Updated: r.Updated}
}

func getRecord(b *bbolt.Bucket, key string) (*record, error) {
	v := b.Get([]byte(key))
	if v == nil {
		return nil, fmt.Errorf("snapshot %q does not exist: %w", key, ErrNotFound)
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decoding snapshot %q: %w", key, err)
	}
	return &r, nil
}

func putRecord(b *bbolt.Bucket, key string, r *record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding snapshot %q: %w", key, err)
	}
	if err := b.Put([]byte(key), v); err != nil {
		return fmt.Errorf("storing snapshot %q: %w", key, err)
	}
	return nil
}

// parentIDs returns the IDs of the committed chain starting at parent,
// nearest first.
func parentIDs(b *bbolt.Bucket, parent string) ([]uint64, error) {
	var ids []uint64
	for parent != "" {
		r, err := getRecord(b, parent)
		if err != nil {
			return nil, fmt.Errorf("resolving parent chain: %w", err)
		}
		ids = append(ids, r.ID)
		parent = r.Parent
		if len(ids) > maxChain {
			return nil, fmt.Errorf("parent chain longer than %d: %w", maxChain, ErrFailedPrecondition)
		}
	}
	return ids, nil
}

// hasChildren reports whether any snapshot names key as its parent.
func hasChildren(b *bbolt.Bucket, key string) (string, error) {
	var child string
	err := b.ForEach(func(k, v []byte) error {
		var r record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decoding snapshot %q: %w", k, err)
		}
		if r.Parent == key {
			child = string(k)
		}
		return nil
	})
	return child, err
}
