package overlay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/singleflight"
)

// ErrDigestMismatch reports layer content that does not match its diff ID.
var ErrDigestMismatch = errors.New("layer digest mismatch")

// Layer is what Unpack needs of an image layer; go-containerregistry's
// v1.Layer satisfies it.
type Layer interface {
	// DiffID is the digest of the uncompressed tar.
	DiffID() (v1.Hash, error)
	// Uncompressed opens the layer tar.
	Uncompressed() (io.ReadCloser, error)
}

// ChainIDs returns the chain ID of each prefix of a layer stack (OCI image
// spec): the first is the first diff ID, then sha256 of "parent diffID".
func ChainIDs(diffIDs []v1.Hash) []v1.Hash {
	out := make([]v1.Hash, len(diffIDs))
	for i, d := range diffIDs {
		if i == 0 {
			out[i] = d
			continue
		}
		sum := sha256.Sum256([]byte(out[i-1].String() + " " + d.String()))
		out[i] = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	}
	return out
}

// SnapshotStatter is the part of a snapshotter Unpacker uses.
type SnapshotStatter interface {
	Snapshotter
	Statter
}

// Unpacker applies image layers into committed snapshots named by their
// chain IDs. A layer already unpacked (by any image) is not unpacked again,
// and concurrent unpacks of one chain ID in this process happen once.
type Unpacker struct {
	sn     SnapshotStatter
	log    *slog.Logger
	flight singleflight.Group
}

// NewUnpacker returns an Unpacker over sn, whose active snapshots must
// return mounts ApplyLayer understands (like Driver's).
func NewUnpacker(sn SnapshotStatter, log *slog.Logger) *Unpacker {
	if log == nil {
		log = slog.Default()
	}
	return &Unpacker{sn: sn, log: log}
}

// Unpack makes sure every prefix of layers is a committed snapshot and
// returns the chain ID of the top one, the parent to Prepare a container's
// rootfs on. Each layer's content is checked against its diff ID.
func (u *Unpacker) Unpack(ctx context.Context, layers []Layer) (string, error) {
	if len(layers) == 0 {
		return "", fmt.Errorf("unpacking an image without layers: %w", ErrInvalidArgument)
	}
	diffIDs := make([]v1.Hash, len(layers))
	for i, l := range layers {
		d, err := l.DiffID()
		if err != nil {
			return "", fmt.Errorf("diff ID of layer %d: %w", i, err)
		}
		diffIDs[i] = d
	}
	chain := ChainIDs(diffIDs)
	// Find the highest prefix already unpacked.
	start := len(chain)
	for start > 0 {
		if _, err := u.sn.Stat(ctx, chain[start-1].String()); err == nil {
			break
		} else if !errors.Is(err, ErrNotFound) {
			return "", fmt.Errorf("checking snapshot %s: %w", chain[start-1], err)
		}
		start--
	}
	for i := start; i < len(chain); i++ {
		parent := ""
		if i > 0 {
			parent = chain[i-1].String()
		}
		name := chain[i].String()
		_, err, _ := u.flight.Do(name, func() (any, error) {
			return nil, u.unpackOne(ctx, name, parent, diffIDs[i], layers[i])
		})
		if err != nil {
			return "", fmt.Errorf("unpacking layer %d (%s): %w", i, diffIDs[i], err)
		}
	}
	return chain[len(chain)-1].String(), nil
}

func (u *Unpacker) unpackOne(ctx context.Context, name, parent string, diffID v1.Hash, l Layer) (err error) {
	if _, err := u.sn.Stat(ctx, name); err == nil {
		return nil
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key := "extract-" + hex.EncodeToString(nonce[:]) + "-" + name
	mounts, err := u.sn.Prepare(ctx, key, parent)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := u.sn.Remove(context.WithoutCancel(ctx), key); rerr != nil {
				u.log.WarnContext(ctx, "removing failed unpack", "key", key, "err", rerr)
			}
		}
	}()
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("opening layer: %w", err)
	}
	defer rc.Close()
	h, err := v1.Hasher(diffID.Algorithm)
	if err != nil {
		return fmt.Errorf("diff ID %s: %w", diffID, err)
	}
	if _, err := ApplyLayer(ctx, mounts, io.TeeReader(rc, h), WithApplyLogger(u.log)); err != nil {
		return err
	}
	// The tar reader stops at the end marker; hash the padding after it.
	if _, err := io.Copy(h, rc); err != nil {
		return fmt.Errorf("reading layer: %w", err)
	}
	if got := digestOf(diffID.Algorithm, h); got != diffID {
		return fmt.Errorf("layer content has diff ID %s, the image says %s: %w", got, diffID, ErrDigestMismatch)
	}
	if err := u.sn.Commit(ctx, name, key); err != nil {
		if errors.Is(err, ErrAlreadyExists) {
			// Unpacked meanwhile by another process.
			_ = u.sn.Remove(context.WithoutCancel(ctx), key)
			return nil
		}
		return err
	}
	return nil
}

func digestOf(alg string, h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: alg, Hex: hex.EncodeToString(h.Sum(nil))}
}
