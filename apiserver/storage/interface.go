package storage

import (
	"context"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Sentinel errors. Implementations wrap them with the key, e.g.
// fmt.Errorf("key %q: %w", key, storage.ErrNotFound).
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrConflict: the object was modified since the resourceVersion the
	// caller based its write on.
	ErrConflict = errors.New("object has been modified")
	// ErrGone: the requested resourceVersion is older than the history kept
	// ("too old resource version"); the client must re-list.
	ErrGone = errors.New("too old resource version")
	// ErrInvalidContinue: a continue token that is malformed or expired.
	ErrInvalidContinue = errors.New("invalid continue token")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store is closed")
)

// Predicate selects objects for List and Watch. A nil Predicate matches all.
type Predicate func(obj runtime.Object) bool

// ListOptions shape a List.
type ListOptions struct {
	// Predicate filters the objects returned; Limit counts matched objects.
	Predicate Predicate
	// Limit caps the number of objects returned; 0 means no limit. When
	// more remain, ListResult.Continue is set.
	Limit int64
	// Continue is the token of a previous ListResult for the same prefix.
	Continue string
	// ReadOnly promises that the caller will not modify the returned
	// objects (nor their TypeMeta), so the store may return the objects it
	// keeps instead of copies. Stores are free to copy anyway.
	ReadOnly bool
}

// ListResult is one page of a List.
type ListResult struct {
	Items []runtime.Object // sorted by key
	// ResourceVersion is the store's revision the list reflects. Every page
	// of a paginated list reports the revision of its first page.
	ResourceVersion uint64
	// Continue is empty on the last page.
	Continue string
	// RemainingItemCount, when known, counts the objects after this page
	// (before filtering by Predicate only when Predicate is nil).
	RemainingItemCount *int64
}

// WatchOptions shape a Watch.
type WatchOptions struct {
	// ResourceVersion: events strictly after this revision are delivered,
	// replaying history first. 0 means "from now". A revision older than
	// the history kept fails with ErrGone.
	ResourceVersion uint64
	// Predicate filters with Kubernetes semantics: an object entering the
	// selection arrives as ADDED, one leaving it as DELETED (carrying the
	// new state), one staying in it as MODIFIED.
	Predicate Predicate
	// Bookmarks asks for periodic watch.Bookmark events telling the watcher
	// the revision it has caught up to. NewFunc builds their (empty) object,
	// whose resourceVersion the store sets; bookmarks need NewFunc.
	Bookmarks bool
	NewFunc   func() runtime.Object
	// Index, when set, promises that Predicate accepts only objects for
	// which Index.Func returns Index.Value (a field selector's exact
	// match, such as the kubelet's spec.nodeName=<node>). A store may then
	// skip, without running Predicate, every change whose object and
	// previous object both have another value: the watch cache indexes
	// its watchers by value, so a change visits only the watchers of its
	// values. The events delivered are the same as without Index.
	Index *WatchIndex
}

// WatchIndex names the value a watch's predicate requires of one indexed
// field.
type WatchIndex struct {
	// Name identifies Func: every watch giving the same Name gives a Func
	// computing the same thing (e.g. "pods:spec.nodeName").
	Name string
	// Func returns the indexed value of an object.
	Func func(obj runtime.Object) string
	// Value is the value the watch's predicate requires.
	Value string
}

// Store persists objects under keys. Objects passed in and returned are
// owned by the caller: a Store deep-copies what it keeps.
type Store interface {
	// Create stores obj under key; ErrExists if the key is taken. obj must
	// have an empty resourceVersion. Returns the stored object with its new
	// resourceVersion.
	Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)
	// Get returns the object under key or ErrNotFound.
	Get(ctx context.Context, key string) (runtime.Object, error)
	// List returns the objects whose keys start with prefix (which should
	// end in "/"), sorted by key.
	List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error)
	// Update reads the object under key and calls tryUpdate with a copy of
	// it; the returned object is written if the key still holds the same
	// revision, otherwise tryUpdate runs again on the newer object. If the
	// returned object carries a non-empty resourceVersion different from
	// the current one, Update fails with ErrConflict (optimistic
	// concurrency for PUT). tryUpdate errors abort and are returned as is.
	// Returns ErrNotFound when the key holds nothing.
	Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error)
	// Delete removes the object under key after precondition (may be nil)
	// accepted the current object; precondition errors are returned as is.
	// Returns the deleted object, stamped with the deletion's revision.
	Delete(ctx context.Context, key string, precondition func(cur runtime.Object) error) (runtime.Object, error)
	// Watch streams changes under prefix. The watch ends when ctx is done,
	// Stop is called, or the watcher is dropped for being too slow (the
	// result channel is then closed; the client resumes from the last
	// revision it saw).
	Watch(ctx context.Context, prefix string, opts WatchOptions) (watch.Interface, error)
	// CurrentRevision is the revision of the latest write.
	CurrentRevision(ctx context.Context) (uint64, error)
	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}

// Key returns the storage key of an object, etcd-style:
// /registry/<resource>/<namespace>/<name> for namespaced objects and
// /registry/<resource>/<name> for cluster-scoped ones. Resources outside the
// core group are prefixed with their group: /registry/apps/deployments/...
// An empty name gives the prefix of a namespace (or of the whole resource
// when namespace is empty too), ending in "/".
func Key(gr schema.GroupResource, namespace, name string) string {
	var b strings.Builder
	b.WriteString(Prefix(gr))
	if namespace != "" {
		b.WriteString(namespace)
		b.WriteByte('/')
	}
	b.WriteString(name)
	return b.String()
}

// Prefix returns the key prefix of every object of a resource, ending in "/".
func Prefix(gr schema.GroupResource) string {
	if gr.Group == "" {
		return "/registry/" + gr.Resource + "/"
	}
	return "/registry/" + gr.Group + "/" + gr.Resource + "/"
}
