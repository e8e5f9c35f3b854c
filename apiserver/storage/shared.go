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
