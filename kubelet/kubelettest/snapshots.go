package kubelettest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"

	"github.com/podkit/podkit/kubelet"
	"github.com/podkit/podkit/overlay"
)

// Snapshots is an in-memory overlay.Snapshotter and kubelet.Unpacker: it
// records snapshots and returns bind mounts of made-up paths, so a test
// sees which snapshots exist without mounting anything.
type Snapshots struct {
	mu    sync.Mutex
	snaps map[string]snapshot
}

type snapshot struct {
	parent string
	kind   overlay.Kind
}

var _ overlay.Snapshotter = (*Snapshots)(nil)

// NewSnapshots returns an empty snapshotter.
func NewSnapshots() *Snapshots { return &Snapshots{snaps: map[string]snapshot{}} }

func (s *Snapshots) create(key, parent string, kind overlay.Kind) ([]overlay.Mount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.snaps[key]; ok {
		return nil, fmt.Errorf("snapshot %s: %w", key, overlay.ErrAlreadyExists)
	}
	if parent != "" {
		if p, ok := s.snaps[parent]; !ok || p.kind != overlay.KindCommitted {
			return nil, fmt.Errorf("parent %s: %w", parent, overlay.ErrNotFound)
		}
	}
	s.snaps[key] = snapshot{parent: parent, kind: kind}
	return mounts(key), nil
}

func mounts(key string) []overlay.Mount {
	return []overlay.Mount{{Type: "bind", Source: "/kubelettest/snapshots/" + key, Options: []string{"rbind", "rw"}}}
}

// Prepare creates an active snapshot.
func (s *Snapshots) Prepare(_ context.Context, key, parent string) ([]overlay.Mount, error) {
	return s.create(key, parent, overlay.KindActive)
}

// View creates a view.
func (s *Snapshots) View(_ context.Context, key, parent string) ([]overlay.Mount, error) {
	return s.create(key, parent, overlay.KindView)
}

// Commit turns an active snapshot into a committed one.
func (s *Snapshots) Commit(_ context.Context, name, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.snaps[key]
	if !ok || sn.kind != overlay.KindActive {
		return fmt.Errorf("snapshot %s: %w", key, overlay.ErrNotFound)
	}
	if _, ok := s.snaps[name]; ok {
		return fmt.Errorf("snapshot %s: %w", name, overlay.ErrAlreadyExists)
	}
	delete(s.snaps, key)
	s.snaps[name] = snapshot{parent: sn.parent, kind: overlay.KindCommitted}
	return nil
}

// Mounts returns an active snapshot's mounts.
func (s *Snapshots) Mounts(_ context.Context, key string) ([]overlay.Mount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.snaps[key]; !ok {
		return nil, fmt.Errorf("snapshot %s: %w", key, overlay.ErrNotFound)
	}
	return mounts(key), nil
}

// Remove deletes a snapshot; removing a missing one succeeds.
func (s *Snapshots) Remove(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sn := range s.snaps {
		if sn.parent == key {
			return fmt.Errorf("snapshot %s has child %s: %w", key, k, overlay.ErrFailedPrecondition)
		}
	}
	delete(s.snaps, key)
	return nil
}

// Unpack commits one snapshot per layer prefix, named by a hash of the
// layers' diff IDs, and returns the top one ("" for no layers).
func (s *Snapshots) Unpack(ctx context.Context, layers []overlay.Layer) (string, error) {
	parent := ""
	h := sha256.New()
	for _, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			return "", err
		}
		h.Write([]byte(d.String()))
		chain := "sha256:" + hex.EncodeToString(h.Sum(nil))
		s.mu.Lock()
		_, ok := s.snaps[chain]
		if !ok {
			s.snaps[chain] = snapshot{parent: parent, kind: overlay.KindCommitted}
		}
		s.mu.Unlock()
		parent = chain
	}
	return parent, nil
}

// Active lists the active snapshots (containers' rootfs), sorted.
func (s *Snapshots) Active() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, sn := range s.snaps {
		if sn.kind == overlay.KindActive {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Compile-time checks against the kubelet's interfaces.
var (
	_ kubelet.Images   = (*Images)(nil)
	_ kubelet.Unpacker = (*Snapshots)(nil)
)
