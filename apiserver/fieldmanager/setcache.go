package fieldmanager

import (
	"bytes"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Decoded managedFields. Every update decodes the field set of each
// entry of the live object; the library also re-encodes each one and
// reconciles it with the schema. Most of those sets are shared by many
// objects — the entry kube-controller-manager wrote when it created each
// pod of one ReplicaSet, the entry of each controller writing the status
// of similar objects — so the update fast path keeps the sets it decoded,
// by their JSON, and a set is only kept when decoding and re-encoding it
// gives the same JSON and reconciling it changes nothing: then the entry
// can be written back as it is, as the library would write it.

// setCacheGeneration bounds the cache of a kind: it holds the sets of at
// most two generations of this many entries; a set in use moves to the
// current generation, the others are dropped with the older one.
const setCacheGeneration = 256

// setCache holds the stable sets of one kind (reconciling depends on the
// kind's schema).
type setCache struct {
	mu       sync.Mutex
	cur, old map[string]*fieldpath.Set
}

// get returns the set whose canonical JSON is raw, or nil.
func (c *setCache) get(raw []byte) *fieldpath.Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.cur[string(raw)]; s != nil {
		return s
	}
	s := c.old[string(raw)]
	if s != nil {
		c.putLocked(string(raw), s)
	}
	return s
}

func (c *setCache) put(raw []byte, s *fieldpath.Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(string(raw), s)
}

func (c *setCache) putLocked(k string, s *fieldpath.Set) {
	if len(c.cur) >= setCacheGeneration {
		c.old, c.cur = c.cur, nil
	}
	if c.cur == nil {
		c.cur = make(map[string]*fieldpath.Set, setCacheGeneration)
	}
	c.cur[k] = s
}

// stableSet returns the field set of a managedFields entry's JSON, or
// false when the library would not write that JSON back unchanged: it is
// not the set's own encoding, or the set needs reconciling with the
// schema. The set must not be modified.
func (p *kindPlan) stableSet(raw []byte) (*fieldpath.Set, bool) {
	if s := p.sets.get(raw); s != nil {
		return s, true
	}
	s := &fieldpath.Set{}
	if err := s.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, false
	}
	again, err := s.ToJSON()
	if err != nil || !bytes.Equal(again, raw) {
		return nil, false
	}
	if r, err := typed.ReconcileFieldSetWithSchema(s, p.recon); err != nil || r != nil {
		return nil, false
	}
	p.sets.put(raw, s)
	return s, true
}
