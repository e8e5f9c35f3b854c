package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// maxChain is the deepest parent chain accepted (overlayfs stacks at most
// 500 lower layers).
const maxChain = 500

// Driver is the overlayfs Snapshotter. Its root holds metadata.db and one
// directory per snapshot, snapshots/<id>/{fs,work}: fs is the layer (the
// upperdir of an active snapshot), work is overlayfs' workdir.
type Driver struct {
	root     string
	db       *bbolt.DB
	now      func() time.Time
	log      *slog.Logger
	indexOff bool
	// dirs is held shared by operations that create or remove snapshot
	// directories, and exclusively by Cleanup.
	dirs sync.RWMutex
}

var (
	_ Snapshotter   = (*Driver)(nil)
	_ Statter       = (*Driver)(nil)
	_ UsageReporter = (*Driver)(nil)
	_ Walker        = (*Driver)(nil)
	_ Cleaner       = (*Driver)(nil)
)

type options struct {
	now    func() time.Time
	log    *slog.Logger
	noSync bool
}

// Option configures a Driver.
type Option func(*options) error

// WithClock sets the clock used for Created/Updated times.
func WithClock(now func() time.Time) Option {
	return func(o *options) error {
		if now == nil {
			return fmt.Errorf("nil clock: %w", ErrInvalidArgument)
		}
		o.now = now
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("nil logger: %w", ErrInvalidArgument)
		}
		o.log = l
		return nil
	}
}

// WithNoSync skips fsync of the metadata database on every change: faster,
// but a crash may lose the latest changes (leftover directories are then
// reclaimed by Cleanup). Meant for tests and benchmarks.
func WithNoSync() Option {
	return func(o *options) error { o.noSync = true; return nil }
}

// New opens (or creates) an overlayfs snapshotter rooted at root. The root
// must be on a filesystem overlayfs accepts as upper layer (ext4, xfs, ...).
func New(root string, opts ...Option) (*Driver, error) {
	o := options{now: time.Now, log: slog.Default()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if root == "" {
		return nil, fmt.Errorf("empty root: %w", ErrInvalidArgument)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("snapshotter root %q: %w", root, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, "snapshots"), 0o700); err != nil {
		return nil, fmt.Errorf("creating snapshotter root: %w", err)
	}
	db, err := bbolt.Open(filepath.Join(abs, "metadata.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second, NoSync: o.noSync})
	if err != nil {
		return nil, fmt.Errorf("opening snapshot metadata: %w", err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketSnapshots)
		return err
	}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("initialising snapshot metadata: %w", err)
	}
	return &Driver{root: abs, db: db, now: o.now, log: o.log, indexOff: supportsIndexOff()}, nil
}

// Close closes the metadata database. Mounted snapshots stay mounted.
func (d *Driver) Close() error { return d.db.Close() }

// Root returns the snapshotter's root directory.
func (d *Driver) Root() string { return d.root }

func (d *Driver) dir(id uint64) string {
	return filepath.Join(d.root, "snapshots", strconv.FormatUint(id, 10))
}

func (d *Driver) fsDir(id uint64) string   { return filepath.Join(d.dir(id), "fs") }
func (d *Driver) workDir(id uint64) string { return filepath.Join(d.dir(id), "work") }

// Prepare creates a writable snapshot key over the committed parent.
func (d *Driver) Prepare(ctx context.Context, key, parent string) ([]Mount, error) {
	return d.create(ctx, KindActive, key, parent)
}

// View creates a read-only snapshot key over the committed parent.
func (d *Driver) View(ctx context.Context, key, parent string) ([]Mount, error) {
	return d.create(ctx, KindView, key, parent)
}

func (d *Driver) create(ctx context.Context, kind Kind, key, parent string) ([]Mount, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("empty snapshot key: %w", ErrInvalidArgument)
	}
	d.dirs.RLock()
	defer d.dirs.RUnlock()
	tmp, err := os.MkdirTemp(filepath.Join(d.root, "snapshots"), "new-")
	if err != nil {
		return nil, fmt.Errorf("creating snapshot directory: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := os.Mkdir(filepath.Join(tmp, "fs"), 0o755); err != nil {
		return nil, fmt.Errorf("creating snapshot directory: %w", err)
	}
	if kind == KindActive {
		if err := os.Mkdir(filepath.Join(tmp, "work"), 0o711); err != nil {
			return nil, fmt.Errorf("creating snapshot directory: %w", err)
		}
	}
	var mounts []Mount
	err = d.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSnapshots)
		if b.Get([]byte(key)) != nil {
			return fmt.Errorf("snapshot %q: %w", key, ErrAlreadyExists)
		}
		var parents []uint64
		if parent != "" {
			p, err := getRecord(b, parent)
			if err != nil {
				return fmt.Errorf("parent of %q: %w", key, err)
			}
			if p.Kind != KindCommitted {
				return fmt.Errorf("parent %q is %s, not committed: %w", parent, p.Kind, ErrFailedPrecondition)
			}
			if parents, err = parentIDs(b, parent); err != nil {
				return err
			}
			if len(parents) >= maxChain {
				return fmt.Errorf("snapshot %q would stack %d layers, the limit is %d: %w", key, len(parents)+1, maxChain, ErrFailedPrecondition)
			}
		}
		id, err := b.NextSequence()
		if err != nil {
			return fmt.Errorf("allocating snapshot id: %w", err)
		}
		now := d.now().UTC()
		r := &record{ID: id, Kind: kind, Parent: parent, Created: now, Updated: now}
		if err := putRecord(b, key, r); err != nil {
			return err
		}
		if err := os.Rename(tmp, d.dir(id)); err != nil {
			return fmt.Errorf("creating snapshot %q: %w", key, err)
		}
		mounts = d.mounts(r, parents)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return mounts, nil
}

// mounts builds the mounts of an active snapshot or view.
func (d *Driver) mounts(r *record, parents []uint64) []Mount {
	if len(parents) == 0 {
		ro := "rw"
		if r.Kind == KindView {
			ro = "ro"
		}
		return []Mount{{Type: "bind", Source: d.fsDir(r.ID), Options: []string{ro, "rbind"}}}
	}
	lowers := make([]string, len(parents))
	for i, id := range parents {
		lowers[i] = d.fsDir(id)
	}
	if r.Kind == KindView {
		if len(lowers) == 1 {
			return []Mount{{Type: "bind", Source: lowers[0], Options: []string{"ro", "rbind"}}}
		}
		return []Mount{{Type: "overlay", Source: "overlay", Options: []string{"ro", "lowerdir=" + strings.Join(lowers, ":")}}}
	}
	var opts []string
	if d.indexOff {
		opts = append(opts, "index=off")
	}
	opts = append(opts,
		"workdir="+d.workDir(r.ID),
		"upperdir="+d.fsDir(r.ID),
		"lowerdir="+strings.Join(lowers, ":"),
	)
	return []Mount{{Type: "overlay", Source: "overlay", Options: opts}}
}

// Mounts returns the mounts of the active snapshot or view key.
func (d *Driver) Mounts(ctx context.Context, key string) ([]Mount, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var mounts []Mount
	err := d.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSnapshots)
		r, err := getRecord(b, key)
		if err != nil {
			return err
		}
		if r.Kind == KindCommitted {
			return fmt.Errorf("snapshot %q is committed, it has no mounts: %w", key, ErrFailedPrecondition)
		}
		parents, err := parentIDs(b, r.Parent)
		if err != nil {
			return err
		}
		mounts = d.mounts(r, parents)
		return nil
	})
	return mounts, err
}

// Commit turns the active snapshot key into the committed snapshot name.
func (d *Driver) Commit(ctx context.Context, name, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if name == "" {
		return fmt.Errorf("empty snapshot name: %w", ErrInvalidArgument)
	}
	// Measure outside the write transaction: a large layer takes a while.
	var id uint64
	if err := d.db.View(func(tx *bbolt.Tx) error {
		r, err := getRecord(tx.Bucket(bucketSnapshots), key)
		if err == nil {
			id = r.ID
		}
		return err
	}); err != nil {
		return err
	}
	u, err := diskUsage(ctx, d.fsDir(id))
	if err != nil {
		return fmt.Errorf("measuring snapshot %q: %w", key, err)
	}
	return d.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSnapshots)
		r, err := getRecord(b, key)
		if err != nil {
			return err
		}
		if r.Kind != KindActive {
			return fmt.Errorf("committing %s snapshot %q: only active snapshots can be committed: %w", r.Kind, key, ErrFailedPrecondition)
		}
		if b.Get([]byte(name)) != nil {
			return fmt.Errorf("committing %q as %q: %w", key, name, ErrAlreadyExists)
		}
		r.Kind, r.Usage, r.Updated = KindCommitted, &u, d.now().UTC()
		if err := b.Delete([]byte(key)); err != nil {
			return fmt.Errorf("committing %q: %w", key, err)
		}
		// The workdir is only needed while mounted as an upper layer.
		if err := os.RemoveAll(d.workDir(r.ID)); err != nil {
			return fmt.Errorf("committing %q: %w", key, err)
		}
		return putRecord(b, name, r)
	})
}

// Remove deletes the snapshot key and its directory. It is a no-op when key
// does not exist and fails with ErrFailedPrecondition when key is a parent.
func (d *Driver) Remove(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.dirs.RLock()
	defer d.dirs.RUnlock()
	var id uint64
	err := d.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketSnapshots)
		r, err := getRecord(b, key)
		if err != nil {
			return err
		}
		child, err := hasChildren(b, key)
		if err != nil {
			return err
		}
		if child != "" {
			return fmt.Errorf("removing snapshot %q: snapshot %q is based on it: %w", key, child, ErrFailedPrecondition)
		}
		id = r.ID
		if err := b.Delete([]byte(key)); err != nil {
			return fmt.Errorf("removing snapshot %q: %w", key, err)
		}
		// Rename inside the transaction so a failure keeps both in place.
		if err := os.Rename(d.dir(id), d.removedDir(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing snapshot %q: %w", key, err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(d.removedDir(id)); err != nil {
		// Cleanup reclaims it later; the snapshot itself is gone.
		d.log.WarnContext(ctx, "removing snapshot directory", "key", key, "err", err)
	}
	return nil
}

func (d *Driver) removedDir(id uint64) string {
	return filepath.Join(d.root, "snapshots", "rm-"+strconv.FormatUint(id, 10))
}

// Stat describes the snapshot key.
func (d *Driver) Stat(ctx context.Context, key string) (Info, error) {
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	var info Info
	err := d.db.View(func(tx *bbolt.Tx) error {
		r, err := getRecord(tx.Bucket(bucketSnapshots), key)
		if err != nil {
			return err
		}
		info = r.info(key)
		return nil
	})
	return info, err
}

// Usage returns the disk usage of key's own layer: measured at commit time
// for committed snapshots, measured now for active ones.
func (d *Driver) Usage(ctx context.Context, key string) (Usage, error) {
	var r *record
	err := d.db.View(func(tx *bbolt.Tx) error {
		var err error
		r, err = getRecord(tx.Bucket(bucketSnapshots), key)
		return err
	})
	if err != nil {
		return Usage{}, err
	}
	if r.Kind == KindCommitted && r.Usage != nil {
		return *r.Usage, nil
	}
	u, err := diskUsage(ctx, d.fsDir(r.ID))
	if err != nil {
		return Usage{}, fmt.Errorf("measuring snapshot %q: %w", key, err)
	}
	return u, nil
}

// Walk calls fn for every snapshot, in key order.
func (d *Driver) Walk(ctx context.Context, fn WalkFunc) error {
	var infos []Info
	err := d.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSnapshots).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decoding snapshot %q: %w", k, err)
			}
			infos = append(infos, r.info(string(k)))
			return nil
		})
	})
	if err != nil {
		return err
	}
	// fn runs outside the transaction so it may call back into d.
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(ctx, info); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup removes snapshot directories no snapshot refers to: leftovers of
// a crash between creating or removing a directory and the metadata.
func (d *Driver) Cleanup(ctx context.Context) error {
	d.dirs.Lock()
	defer d.dirs.Unlock()
	known := map[string]bool{}
	err := d.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketSnapshots).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decoding snapshot %q: %w", k, err)
			}
			known[strconv.FormatUint(r.ID, 10)] = true
			return nil
		})
	})
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(d.root, "snapshots"))
	if err != nil {
		return fmt.Errorf("cleaning up snapshots: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if known[e.Name()] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.root, "snapshots", e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("cleaning up snapshot directory %s: %w", e.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// supportsIndexOff reports whether the kernel's overlayfs knows "index",
// which podkit turns off: shared lower layers must not be tied to one upper.
func supportsIndexOff() bool {
	_, err := os.Stat("/sys/module/overlay/parameters/index")
	return err == nil
}
