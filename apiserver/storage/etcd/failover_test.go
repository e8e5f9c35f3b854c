package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
	"github.com/podkit/podkit/apiserver/storage/etcd/etcdtest"
)

var podsGR = schema.GroupResource{Resource: "pods"}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}}
}

// nextEvent waits (generously) for the next non-bookmark event.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "watch ended")
			if ev.Type == watch.Bookmark {
				continue
			}
			return ev
		case <-timeout:
			require.FailNow(t, "no watch event")
		}
	}
}

// eventually retries op until it succeeds.
func eventually(t *testing.T, what string, op func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			require.NoError(t, err, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestWatchResumesAfterMemberRestart(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	s := openStore(t, c, etcd.Config{}, etcd.WithRequestTimeout(5*time.Second))
	w, err := s.Watch(ctx, storage.Key(podsGR, "ns", ""), storage.WatchOptions{})
	require.NoError(t, err)
	defer w.Stop()
	before, err := s.Create(ctx, storage.Key(podsGR, "ns", "before"), pod("ns", "before"))
	require.NoError(t, err)
	assert.Equal(t, "before", nextEvent(t, w).Object.(*corev1.Pod).Name)

	m := c.Members[0]
	require.NoError(t, m.Stop())
	c.Restart(t, m)

	var after runtime.Object
	eventually(t, "create after restart", func() error {
		after, err = s.Create(ctx, storage.Key(podsGR, "ns", "after"), pod("ns", "after"))
		return err
	})
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, "after", ev.Object.(*corev1.Pod).Name, "the same watch goes on after the restart")
	rv, _ := storage.Revision(after)
	b, _ := storage.Revision(before)
	assert.Greater(t, rv, b)
}

func TestGoneAfterCompaction(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	s := openStore(t, c, etcd.Config{})
	prefix := storage.Key(podsGR, "ns", "")
	for i := range 5 {
		_, err := s.Create(ctx, storage.Key(podsGR, "ns", fmt.Sprintf("p%d", i)), pod("ns", fmt.Sprintf("p%d", i)))
		require.NoError(t, err)
	}
	first, err := s.List(ctx, prefix, storage.ListOptions{Limit: 2})
	require.NoError(t, err)
	require.NotEmpty(t, first.Continue)
	// Before compaction the token works.
	_, err = s.List(ctx, prefix, storage.ListOptions{Limit: 2, Continue: first.Continue})
	require.NoError(t, err)

	for i := range 5 {
		_, err := s.Delete(ctx, storage.Key(podsGR, "ns", fmt.Sprintf("p%d", i)), nil)
		require.NoError(t, err)
	}
	cur, err := s.CurrentRevision(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Compact(ctx, cur))
	require.NoError(t, s.Compact(ctx, cur), "compacting again is harmless")

	_, err = s.List(ctx, prefix, storage.ListOptions{Limit: 2, Continue: first.Continue})
	require.ErrorIs(t, err, storage.ErrContinueExpired)
	_, err = s.Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: first.ResourceVersion})
	require.ErrorIs(t, err, storage.ErrGone)

	// Another API server (a second store) compacting is seen through
	// etcd: a new list page at the compacted revision expires too.
	other := openStore(t, c, etcd.Config{Prefix: "/other/registry"})
	_, err = other.List(ctx, "/registry/pods/", storage.ListOptions{Limit: 1, Continue: first.Continue})
	require.ErrorIs(t, err, storage.ErrContinueExpired)

	// The current revision still works.
	w, err := s.Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: cur})
	require.NoError(t, err)
	w.Stop()
}

func TestStoresShareOneEtcd(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	a := openStore(t, c, etcd.Config{Prefix: "/shared/registry"})
	b := openStore(t, c, etcd.Config{Prefix: "/shared/registry"})
	prefix := storage.Key(podsGR, "ns", "")
	wb, err := b.Watch(ctx, prefix, storage.WatchOptions{})
	require.NoError(t, err)
	defer wb.Stop()

	created, err := a.Create(ctx, storage.Key(podsGR, "ns", "x"), pod("ns", "x"))
	require.NoError(t, err)
	ev := nextEvent(t, wb)
	assert.Equal(t, watch.Added, ev.Type)
	assert.Equal(t, created.(*corev1.Pod).ResourceVersion, ev.Object.(*corev1.Pod).ResourceVersion)

	// A watch on b from a revision written through a, which b's cache
	// may not have reached, starts right after it.
	updated, err := a.Update(ctx, storage.Key(podsGR, "ns", "x"), func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Labels["k"] = "v"
		return cur, nil
	})
	require.NoError(t, err)
	rv, _ := storage.Revision(updated)
	wb2, err := b.Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: rv})
	require.NoError(t, err)
	defer wb2.Stop()
	_, err = a.Delete(ctx, storage.Key(podsGR, "ns", "x"), nil)
	require.NoError(t, err)
	assert.Equal(t, watch.Deleted, nextEvent(t, wb2).Type)

	// Optimistic concurrency holds across stores: a PUT based on a
	// stale object conflicts, whichever store it goes through.
	fresh, err := a.Create(ctx, storage.Key(podsGR, "ns", "y"), pod("ns", "y"))
	require.NoError(t, err)
	_, err = b.Update(ctx, storage.Key(podsGR, "ns", "y"), func(cur runtime.Object) (runtime.Object, error) {
		cur.(*corev1.Pod).Labels["by"] = "b"
		return cur, nil
	})
	require.NoError(t, err)
	stale := fresh.DeepCopyObject().(*corev1.Pod)
	stale.Labels["by"] = "a"
	_, err = a.Update(ctx, storage.Key(podsGR, "ns", "y"), func(runtime.Object) (runtime.Object, error) { return stale, nil })
	require.ErrorIs(t, err, storage.ErrConflict)

	// Concurrent increments through both stores lose nothing.
	key := storage.Key(podsGR, "ns", "counter")
	_, err = a.Create(ctx, key, pod("ns", "counter"))
	require.NoError(t, err)
	var wg sync.WaitGroup
	for _, st := range []*etcd.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, err := st.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
					p := cur.(*corev1.Pod)
					p.Spec.Priority = ptr(deref(p.Spec.Priority) + 1)
					return p, nil
				})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	got, err := b.Get(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, int32(100), deref(got.(*corev1.Pod).Spec.Priority))
}

func ptr(v int32) *int32 { return &v }

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func TestKeysUnderPrefix(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.Start(t)
	s := openStore(t, c, etcd.Config{Prefix: "/podkit-a"})
	_, err := s.Create(ctx, storage.Key(schema.GroupResource{Group: "apps", Resource: "deployments"}, "ns", "web"), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}})
	require.NoError(t, err)
	resp, err := c.Client(t).Get(ctx, "/podkit-a/apps/deployments/ns/web")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "k8s\x00", string(resp.Kvs[0].Value[:4]), "Kubernetes' protobuf envelope")
}

func TestTLSRequiresClientCertificate(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithTLS())
	tc := c.ClientTLS(t)
	tc.Certificates = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), TLS: tc, Codec: codec()},
		etcd.WithLogger(quiet()), etcd.WithRequestTimeout(3*time.Second))
	require.Error(t, err)

	tlsCfg, err := etcd.LoadTLS(c.TLS.CA, c.TLS.ClientCert, c.TLS.ClientKey)
	require.NoError(t, err)
	s, err := etcd.New(ctx, etcd.Config{Endpoints: c.Endpoints(), TLS: tlsCfg, Codec: codec()}, etcd.WithLogger(quiet()))
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestNoAcknowledgedWriteLostWhenAMemberDies kills one member of three
// (whichever leads) under a steady stream of writes through a store that
// knows all three endpoints; every acknowledged write must be readable.
func TestNoAcknowledgedWriteLostWhenAMemberDies(t *testing.T) {
	ctx := context.Background()
	c := etcdtest.StartCluster(t, 3)
	s := openStore(t, c, etcd.Config{}, etcd.WithRequestTimeout(5*time.Second))
	status, err := c.Client(t).Status(ctx, c.Members[0].ClientURL)
	require.NoError(t, err)
	leader := c.Members[0]
	for _, m := range c.Members {
		st, err := c.Client(t).Status(ctx, m.ClientURL)
		require.NoError(t, err)
		if st.Header.MemberId == status.Leader {
			leader = m
		}
	}

	const writers = 4
	var (
		mu    sync.Mutex
		acked []string
		fails int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%05d", g, i)
				_, err := s.Create(ctx, storage.Key(podsGR, "load", name), pod("load", name))
				mu.Lock()
				if err == nil {
					acked = append(acked, name)
				} else {
					fails++
				}
				mu.Unlock()
			}
		}()
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitCount := func(n int) {
		deadline := time.Now().Add(90 * time.Second)
		for count() < n {
			require.True(t, time.Now().Before(deadline), "writes stalled at %d", count())
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCount(100)
	require.NoError(t, leader.Kill())
	killedAt := count()
	waitCount(killedAt + 200) // the survivors elect a leader and take writes
	close(stop)
	wg.Wait()

	res, err := s.List(ctx, storage.Key(podsGR, "load", ""), storage.ListOptions{})
	require.NoError(t, err)
	stored := map[string]bool{}
	for _, o := range res.Items {
		stored[o.(*corev1.Pod).Name] = true
	}
	for _, name := range acked {
		assert.True(t, stored[name], "acknowledged write %s lost", name)
	}
	t.Logf("%d writes acknowledged (%d before the kill of leader %s), %d failed during failover", len(acked), killedAt, leader.Name, fails)
}
