package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

// fakeStore is a minimal in-memory storage.Store for the plugin tests.
type fakeStore struct {
	mu      sync.Mutex
	objs    map[string]runtime.Object
	rev     uint64
	updates int
	// failList / failGet make List / Get fail.
	failList, failGet error
}

var _ storage.Store = (*fakeStore)(nil)

func newFakeStore() *fakeStore { return &fakeStore{objs: map[string]runtime.Object{}} }

func (s *fakeStore) stamp(obj runtime.Object) {
	s.rev++
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.FormatUint(s.rev, 10))
}

func (s *fakeStore) Create(_ context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[key]; ok {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrExists)
	}
	c := obj.DeepCopyObject()
	s.stamp(c)
	s.objs[key] = c
	return c.DeepCopyObject(), nil
}

func (s *fakeStore) Get(_ context.Context, key string) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failGet != nil {
		return nil, s.failGet
	}
	o, ok := s.objs[key]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	return o.DeepCopyObject(), nil
}

func (s *fakeStore) List(_ context.Context, prefix string, _ storage.ListOptions) (*storage.ListResult, error) {
	return s.list(prefix, true)
}

// list lists the objects under prefix: copies of them when copied, else
// the stored objects themselves.
func (s *fakeStore) list(prefix string, copied bool) (*storage.ListResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failList != nil {
		return nil, s.failList
	}
	var keys []string
	for k := range s.objs {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	res := &storage.ListResult{ResourceVersion: s.rev}
	for _, k := range keys {
		o := s.objs[k]
		if copied {
			o = o.DeepCopyObject()
		}
		res.Items = append(res.Items, o)
	}
	return res, nil
}

func (s *fakeStore) Update(_ context.Context, key string, try func(runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.objs[key]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	next, err := try(cur.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	c := next.DeepCopyObject()
	s.stamp(c)
	s.objs[key] = c
	s.updates++
	return c.DeepCopyObject(), nil
}

func (s *fakeStore) Delete(_ context.Context, key string, pre func(runtime.Object) error) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.objs[key]
	if !ok {
		return nil, fmt.Errorf("key %q: %w", key, storage.ErrNotFound)
	}
	if pre != nil {
		if err := pre(cur); err != nil {
			return nil, err
		}
	}
	delete(s.objs, key)
	return cur, nil
}

func (s *fakeStore) Watch(context.Context, string, storage.WatchOptions) (watch.Interface, error) {
	return nil, errors.New("fake store: watch not supported")
}

func (s *fakeStore) CurrentRevision(context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, nil
}

func (s *fakeStore) Close() error { return nil }

// put stores objects of one resource under their namespace and name.
func (s *fakeStore) put(t *testing.T, gr schema.GroupResource, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		m, err := meta.Accessor(o)
		require.NoError(t, err)
		_, err = s.Create(context.Background(), storage.Key(gr, m.GetNamespace(), m.GetName()), o)
		require.NoError(t, err)
	}
}

// get reads an object back.
func (s *fakeStore) get(t *testing.T, gr schema.GroupResource, ns, name string) runtime.Object {
	t.Helper()
	o, err := s.Get(context.Background(), storage.Key(gr, ns, name))
	require.NoError(t, err)
	return o
}
