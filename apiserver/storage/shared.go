package storage

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// SharedWriter is implemented by stores that can hand back the object they
// keep instead of a copy of it, for callers that only read the result of a
// write (the REST handlers encode it into the response). It is optional:
// callers fall back to Store's methods when a store does not implement it.
//
// The returned object is shared with lists, watchers and later readers:
// neither it nor its TypeMeta may be modified. obj is used as with Create
// and Update and stays the caller's.
type SharedWriter interface {
	// CreateShared is Create returning the stored object itself.
	CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)
	// UpdateShared is Update returning the stored object itself.
	UpdateShared(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error)
}

// SharedReader is implemented by stores that can hand back the object they
// keep instead of a copy, for callers that only read it (admission plugins
// looking up a namespace, a service account or a limit range for every
// create). It is optional: callers fall back to Store.Get. The returned
// object is shared with the store and every other reader: neither it nor
// its TypeMeta may be modified.
type SharedReader interface {
	// GetShared is Get returning the stored object itself.
	GetShared(ctx context.Context, key string) (runtime.Object, error)
}

// OwningWriter is implemented by stores that can take over the objects
// they are asked to store, for callers that build an object only to store
// it (the REST handlers decode a request body, run admission on it and
// hand it to the store). It saves the copies SharedWriter still makes: of
// the caller's object on the way in, and of the current object handed to
// tryUpdate. It is optional: callers fall back to SharedWriter or Store. A
// store wrapping another one implements it only when it can keep every
// rule below.
//
// Ownership rules:
//
//   - Handing over. obj of CreateOwned, and every object tryUpdate returns
//     to UpdateOwned, belongs to the store from the call on, whatever the
//     outcome (an error, a retry, a no-op): the caller must neither modify
//     nor reuse it. The store may modify it before it becomes visible (it
//     sets the resourceVersion in place) and keeps it as the stored object,
//     unless it keeps objects in a canonical form of its own (the bolt
//     store keeps what its codec decodes): it then stores the canonical
//     object built from it and drops it.
//   - Sharing. The objects the methods return, and cur of tryUpdate, are
//     the stored objects, shared with lists, watchers and every reader:
//     neither they, nor anything reachable from them, nor their TypeMeta
//     may be modified.
//   - Copy on write. An object tryUpdate returns may share parts (maps,
//     slices, pointers) with cur that it leaves unchanged: both are
//     read-only from then on. To change such a part it copies it first.
type OwningWriter interface {
	// CreateOwned is Create keeping obj itself: the store sets obj's
	// resourceVersion and stores it without copying it (see the rules
	// above for canonical stores), and returns the stored object, shared.
	// obj is handed over even when the create fails (ErrExists,
	// ErrInvalidObject); a failed create leaves the store, and the object
	// stored under key if any, as they were.
	CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)
	// UpdateOwned is Update without copies. tryUpdate receives the current
	// stored object itself, shared and read-only: to change it, it returns
	// a new object (a copy of cur, or of the parts of cur it changes,
	// carrying the changes), which is handed over to the store.
	//
	// Returning cur itself leaves the object as it is: nothing is written,
	// no event is emitted and cur is returned. So does returning an object
	// equal to cur (Update's no-op rule: semantic equality, TypeMeta and
	// resourceVersion aside), which is then dropped.
	//
	// A result with a resourceVersion other than the current one fails
	// with ErrConflict; an empty resourceVersion is unconditional. When
	// another write lands between tryUpdate and the commit, tryUpdate is
	// called again with the newer stored object: it must build a new
	// result on every call (what it returned before was handed over).
	// Errors of tryUpdate are returned as they are. Every failure
	// (ErrNotFound, ErrConflict, ErrInvalidObject, tryUpdate's errors)
	// leaves the stored object as it was. The result is the stored object,
	// shared.
	UpdateOwned(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error)
}
