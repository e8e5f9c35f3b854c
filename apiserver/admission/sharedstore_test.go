package admission

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
)

// sharedStore is fakeStore as a storage.SharedReader: GetShared and
// read-only lists hand out the stored objects themselves, as the memory and
// bolt stores do, and it counts which kind of read the plugins made.
type sharedStore struct {
	*fakeStore
	sharedGets, copiedGets, readOnlyLists, copiedLists atomic.Int64
}

var _ storage.SharedReader = (*sharedStore)(nil)

func (s *sharedStore) GetShared(_ context.Context, key string) (runtime.Object, error) {
	s.sharedGets.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failGet != nil {
		return nil, s.failGet
	}
	o, ok := s.objs[key]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	return o, nil
}

func (s *sharedStore) Get(ctx context.Context, key string) (runtime.Object, error) {
	s.copiedGets.Add(1)
	return s.fakeStore.Get(ctx, key)
}

func (s *sharedStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if !opts.ReadOnly {
		s.copiedLists.Add(1)
		return s.fakeStore.List(ctx, prefix, opts)
	}
	s.readOnlyLists.Add(1)
	return s.list(prefix, false)
}

// storedGuard remembers the objects a store holds and a deep copy of each:
// whatever becomes of them in the store (a quota status update replaces
// the object), the objects themselves must never change.
type storedGuard struct {
	objs, copies map[string]runtime.Object
}

func guardStored(s *fakeStore) *storedGuard {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := &storedGuard{objs: map[string]runtime.Object{}, copies: map[string]runtime.Object{}}
	for k, o := range s.objs {
		g.objs[k], g.copies[k] = o, o.DeepCopyObject()
	}
	return g
}

func (g *storedGuard) assertUnchanged(t *testing.T) {
	t.Helper()
	for k, o := range g.objs {
		assert.Equal(t, g.copies[k], o, "stored object %s was modified", k)
	}
}

// scribble changes every exported value reachable from v in place (strings,
// numbers, booleans, map entries, slice elements): if an admitted object
// shared memory with a stored one, the stored one changes too.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				scribble(f)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(v.String() + "~")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(v.Int() + 1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.CanSet() {
			v.SetUint(v.Uint() + 1)
		}
	case reflect.Bool:
		if v.CanSet() {
			v.SetBool(!v.Bool())
		}
	}
}

// storedCopies returns deep copies of the objects s holds, by key.
func storedCopies(s *fakeStore) map[string]runtime.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]runtime.Object, len(s.objs))
	for k, o := range s.objs {
		out[k] = o.DeepCopyObject()
	}
	return out
}
