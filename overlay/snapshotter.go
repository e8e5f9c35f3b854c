package overlay

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors of the Snapshotter contract. Implementations wrap them with
// %w so callers can use errors.Is.
var (
	// ErrNotFound reports that a snapshot key does not exist.
	ErrNotFound = errors.New("snapshot not found")
	// ErrAlreadyExists reports that a key (active or committed) is taken.
	ErrAlreadyExists = errors.New("snapshot already exists")
	// ErrFailedPrecondition reports an operation not valid for the
	// snapshot's kind or state (committing a view, removing a parent,
	// using an active snapshot as a parent).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrInvalidArgument reports a malformed argument (an empty key).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnsafePath reports a layer entry that would be written outside the
	// snapshot (absolute path, "..", or through a symbolic link).
	ErrUnsafePath = errors.New("unsafe path in layer")
)

// Mount is one mount, as plain data (it mirrors containerd's mount.Mount).
// Type is "overlay" or "bind"; Options are mount(8)-style options such as
// "ro", "rbind", "lowerdir=...".
type Mount struct {
	Type    string
	Source  string
	Options []string
}

// Kind is the kind of a snapshot.
type Kind int

// The kinds of snapshots.
const (
	KindUnknown Kind = iota
	// KindView is a read-only active snapshot made by View.
	KindView
	// KindActive is a writable snapshot made by Prepare.
	KindActive
	// KindCommitted is an immutable snapshot made by Commit; it can be a
	// parent.
	KindCommitted
)

func (k Kind) String() string {
	switch k {
	case KindView:
		return "View"
	case KindActive:
		return "Active"
	case KindCommitted:
		return "Committed"
	}
	return "Unknown"
}

// Info describes a snapshot.
type Info struct {
	Kind    Kind
	Name    string // the key (active, view) or name (committed)
	Parent  string // the committed parent's name, "" for none
	Created time.Time
	Updated time.Time
}

// Usage is the disk usage of a snapshot's own directory (not its parents):
// bytes allocated and inodes, hard links counted once. For an active
// snapshot it is the writable layer's usage (ephemeral storage).
type Usage struct {
	Inodes int64
	Size   int64
}

// Snapshotter manages snapshots: layered filesystem trees.
//
// Prepare makes an active (writable) snapshot named key on top of the
// committed snapshot parent ("" for an empty one) and returns the mounts of
// its rootfs. View does the same read-only. Commit turns the active snapshot
// key into the committed snapshot name, which other snapshots may use as a
// parent; key no longer exists afterwards. Mounts returns the mounts of an
// active snapshot or view again. Remove deletes a snapshot; it fails with
// ErrFailedPrecondition while committed children use it and succeeds when
// the key does not exist (it is idempotent).
//
// Keys and names share one namespace: a key taken by an active snapshot
// cannot be committed to, nor prepared twice (ErrAlreadyExists). The
// snapshotter does not track where mounts are mounted: callers unmount
// before they Remove.
type Snapshotter interface {
	Prepare(ctx context.Context, key, parent string) ([]Mount, error)
	View(ctx context.Context, key, parent string) ([]Mount, error)
	Commit(ctx context.Context, name, key string) error
	Mounts(ctx context.Context, key string) ([]Mount, error)
	Remove(ctx context.Context, key string) error
}

// Statter is implemented by snapshotters that describe one snapshot.
type Statter interface {
	Stat(ctx context.Context, key string) (Info, error)
}

// UsageReporter is implemented by snapshotters that measure disk usage.
type UsageReporter interface {
	Usage(ctx context.Context, key string) (Usage, error)
}

// WalkFunc is called for each snapshot by Walk; an error stops the walk.
type WalkFunc func(ctx context.Context, info Info) error

// Walker is implemented by snapshotters that list their snapshots.
type Walker interface {
	Walk(ctx context.Context, fn WalkFunc) error
}

// Cleaner is implemented by snapshotters that reclaim directories left by
// interrupted operations.
type Cleaner interface {
	Cleanup(ctx context.Context) error
}
