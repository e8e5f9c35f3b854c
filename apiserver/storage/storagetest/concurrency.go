package storagetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
)

func (s *suite) concurrencyTests() []test {
	ctx := context.Background()
	return []test{
		{"CounterUnderContention", func(t *testing.T) {
			const writers, perWriter = 8, 200
			st := s.newStore(t)
			key := cmKey("ns", "counter")
			create(t, st, key, newConfigMap("ns", "counter", map[string]string{"n": "0"}))
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				revs = map[uint64]int{}
			)
			errs := make(chan error, writers)
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range perWriter {
						out, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
							cm := cur.(*corev1.ConfigMap)
							n, err := strconv.Atoi(cm.Data["n"])
							if err != nil {
								return nil, err
							}
							cm.Data["n"] = strconv.Itoa(n + 1)
							return cm, nil
						})
						if err != nil {
							errs <- err
							return
						}
						rv, err := storage.Revision(out)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						revs[rv]++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			got, err := st.Get(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(writers*perWriter), got.(*corev1.ConfigMap).Data["n"])
			assert.Len(t, revs, writers*perWriter, "every update has its own revision")
		}},
		{"ConcurrentCreatesWatchedInOrder", func(t *testing.T) {
			const writers, perWriter = 8, 50
			st := s.newStore(t)
			w, err := st.Watch(ctx, podPrefix(""), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			acked := make(chan uint64, writers*perWriter)
			var wg sync.WaitGroup
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						ns := fmt.Sprintf("ns%d", g)
						name := fmt.Sprintf("p%03d", i)
						out, err := st.Create(ctx, podKey(ns, name), newPod(ns, name, nil))
						if !assert.NoError(t, err) {
							return
						}
						rv, err := storage.Revision(out)
						assert.NoError(t, err)
						acked <- rv
					}
				}()
			}
			// Read concurrently with the writers so that the watcher's buffer
			// is never the limit.
			var last uint64
			seen := map[uint64]bool{}
			for range writers * perWriter {
				ev := s.nextNonBookmark(t, w)
				require.Equal(t, watch.Added, ev.Type)
				rv := rev(t, ev.Object)
				require.Greater(t, rv, last, "events arrive in revision order")
				last = rv
				seen[rv] = true
			}
			wg.Wait()
			close(acked)
			for rv := range acked {
				assert.True(t, seen[rv], "acknowledged revision %d has an event", rv)
			}
			assert.Equal(t, last, currentRev(t, st))
		}},
		{"SlowWatcherIsDropped", func(t *testing.T) {
			const buffer, writes = 10, 100
			st := s.tuned(t, Tuning{WatcherBuffer: buffer})
			slow, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer slow.Stop()
			fast, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer fast.Stop()

			// The writer paces itself on the fast watcher, so that only the
			// slow one can fall behind; writes must never block on it.
			for i := range writes {
				name := fmt.Sprintf("p%03d", i)
				out := create(t, st, podKey("ns", name), newPod("ns", name, nil))
				s.expectEvents(t, fast, eventSummary{watch.Added, "ns/" + name, rev(t, out)})
			}
			// The slow one got an in-order prefix, then its channel closed.
			drained := s.closed(t, slow)
			assert.Less(t, len(drained), writes, "the slow watcher must have been dropped")
			for i, ev := range drained {
				assert.Equal(t, fmt.Sprintf("p%03d", i), ev.Object.(*corev1.Pod).Name)
			}
		}},
	}
}

func (s *suite) lifecycleTests() []test {
	return []test{
		{"StopEndsWatch", func(t *testing.T) {
			st := s.newStore(t)
			w, err := st.Watch(context.Background(), podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			w.Stop()
			s.closed(t, w)
			w.Stop() // idempotent
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
		}},
		{"ContextCancellationEndsWatch", func(t *testing.T) {
			st := s.newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			cancel()
			drained := s.closed(t, w)
			assert.LessOrEqual(t, len(drained), 1)
			_, err = st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.ErrorIs(t, err, context.Canceled)
		}},
		{"CancelledContextFailsCalls", func(t *testing.T) {
			st := s.newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := st.Create(ctx, podKey("ns", "a"), newPod("ns", "a", nil))
			require.ErrorIs(t, err, context.Canceled)
			_, err = st.Get(context.Background(), podKey("ns", "a"))
			require.ErrorIs(t, err, storage.ErrNotFound, "a cancelled create writes nothing")
		}},
		{"Close", func(t *testing.T) {
			ctx := context.Background()
			st := s.newStore(t)
			create(t, st, podKey("ns", "a"), newPod("ns", "a", nil))
			w, err := st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			require.NoError(t, err)
			defer w.Stop()
			require.NoError(t, st.Close())
			s.closed(t, w)

			_, err = st.Get(ctx, podKey("ns", "a"))
			assert.ErrorIs(t, err, storage.ErrClosed, "Get")
			_, err = st.Create(ctx, podKey("ns", "b"), newPod("ns", "b", nil))
			assert.ErrorIs(t, err, storage.ErrClosed, "Create")
			_, err = st.Update(ctx, podKey("ns", "a"), func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
			assert.ErrorIs(t, err, storage.ErrClosed, "Update")
			_, err = st.Delete(ctx, podKey("ns", "a"), nil)
			assert.ErrorIs(t, err, storage.ErrClosed, "Delete")
			_, err = st.List(ctx, podPrefix("ns"), storage.ListOptions{})
			assert.ErrorIs(t, err, storage.ErrClosed, "List")
			_, err = st.Watch(ctx, podPrefix("ns"), storage.WatchOptions{})
			assert.ErrorIs(t, err, storage.ErrClosed, "Watch")
			_, err = st.CurrentRevision(ctx)
			assert.ErrorIs(t, err, storage.ErrClosed, "CurrentRevision")
		}},
	}
}
