package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// waitFor is the generous bound of the eventually-style waits below: the
// watch usually delivers in well under a millisecond, but the test
// machine is shared.
const waitFor = 30 * time.Second

// runWebhooks builds the webhook plugins, runs their configuration cache
// until the test ends and waits for its first list.
func runWebhooks(t *testing.T, cfg WebhookConfig) *Webhooks {
	t.Helper()
	d, err := NewWebhooks(cfg)
	require.NoError(t, err)
	stop := startWebhooks(t, d)
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, d.WaitForSync(ctx))
	return d
}

// startWebhooks runs d.Run; the returned function stops it and waits for
// it to return.
func startWebhooks(t *testing.T, d *Webhooks) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Error("Webhooks.Run did not return after its context ended")
		}
	}
}

// callLog records which webhook servers were called, in order.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// recordingHook serves a webhook that allows everything and logs name.
func recordingHook(t *testing.T, l *callLog, name string) (string, []byte) {
	return hookServer(t, func(*corev1.Pod) *admissionv1.AdmissionResponse {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.calls = append(l.calls, name)
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
}

func mutatingConfig(name, url string, ca []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: name + ".example.com", Rules: podRule(), SideEffects: &none,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}}}}
}

func validatingConfig(name, url string, ca []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: name + ".example.com", Rules: podRule(), SideEffects: &none,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca}}}}
}

func podCreate(name string) *Attributes {
	return &Attributes{Operation: Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "ns", Name: name, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}}
}

// eventuallyCalls admits pod creates until the webhooks called for one
// are want, in order.
func eventuallyCalls(t *testing.T, d *Webhooks, l *callLog, want []string) {
	t.Helper()
	var last []string
	ok := assert.Eventually(t, func() bool {
		l.take()
		if err := d.Mutating().Admit(context.Background(), podCreate("p")); err != nil {
			t.Logf("admit: %v", err)
			return false
		}
		last = l.take()
		return slices.Equal(last, want)
	}, waitFor, 5*time.Millisecond)
	if !ok {
		t.Fatalf("webhooks called: %v, want %v", last, want)
	}
}

func TestWebhookCacheFollowsStore(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	calls := &callLog{}
	urlA, caA := recordingHook(t, calls, "a")
	urlB, caB := recordingHook(t, calls, "b")
	urlC, caC := recordingHook(t, calls, "c")
	key := func(name string) string { return storage.Key(mutatingConfigsGR, "", name) }

	// Stored before start: the first write after WaitForSync sees it.
	_, err := st.Create(ctx, key("2-b"), mutatingConfig("2-b", urlB, caB))
	require.NoError(t, err)
	d := runWebhooks(t, WebhookConfig{Store: st})
	require.NoError(t, d.Mutating().Admit(ctx, podCreate("first")))
	assert.Equal(t, []string{"b"}, calls.take(), "stored before start")

	// Created: later writes see it, in name order though created last.
	_, err = st.Create(ctx, key("1-a"), mutatingConfig("1-a", urlA, caA))
	require.NoError(t, err)
	eventuallyCalls(t, d, calls, []string{"a", "b"})

	// Updated: "1-a" now points at server c.
	_, err = st.Update(ctx, key("1-a"), func(cur runtime.Object) (runtime.Object, error) {
		c := cur.DeepCopyObject().(*admissionregistrationv1.MutatingWebhookConfiguration)
		c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &urlC, CABundle: caC}
		return c, nil
	})
	require.NoError(t, err)
	eventuallyCalls(t, d, calls, []string{"c", "b"})

	// Deleted.
	_, err = st.Delete(ctx, key("2-b"), nil)
	require.NoError(t, err)
	eventuallyCalls(t, d, calls, []string{"c"})
	_, err = st.Delete(ctx, key("1-a"), nil)
	require.NoError(t, err)
	eventuallyCalls(t, d, calls, nil)
}

func TestValidatingWebhookCacheOrder(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	denied, caDenied := hookServer(t, func(*corev1.Pod) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "no"}}
	})
	d := runWebhooks(t, WebhookConfig{Store: st})
	require.NoError(t, d.Validating().Validate(ctx, podCreate("p")), "no configurations")

	for _, name := range []string{"c", "a", "b"} {
		_, err := st.Create(ctx, storage.Key(validatingConfigsGR, "", name), validatingConfig(name, denied, caDenied))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		return apierrors.IsForbidden(d.Validating().Validate(ctx, podCreate("p")))
	}, waitFor, 5*time.Millisecond, "created configurations deny")
	require.Eventually(t, func() bool {
		hooks, err := d.validating.get(ctx, waitFor)
		require.NoError(t, err)
		var names []string
		for _, h := range hooks {
			names = append(names, h.Name)
		}
		return slices.Equal(names, []string{"a.example.com", "b.example.com", "c.example.com"})
	}, waitFor, 5*time.Millisecond, "webhooks in configuration name order")
	err := d.Validating().Validate(ctx, podCreate("p"))
	assert.Equal(t, `admission webhook "a.example.com" denied the request: no`, err.Error(), "the first in order reports")

	for _, name := range []string{"a", "b", "c"} {
		_, err := st.Delete(ctx, storage.Key(validatingConfigsGR, "", name), nil)
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		return d.Validating().Validate(ctx, podCreate("p")) == nil
	}, waitFor, 5*time.Millisecond, "deleted configurations no longer apply")
}

// flakyStore fails every List while failing is set.
type flakyStore struct {
	storage.Store
	failing atomic.Bool
}

var errStoreDown = errors.New("store unavailable")

func (s *flakyStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	if s.failing.Load() {
		return nil, errStoreDown
	}
	return s.Store.List(ctx, prefix, opts)
}

func TestWebhooksFailClosedUntilSynced(t *testing.T) {
	ctx := context.Background()
	calls := &callLog{}
	url, ca := recordingHook(t, calls, "a")
	st := &flakyStore{Store: memory.New()}
	t.Cleanup(func() { _ = st.Close() })
	_, err := st.Create(ctx, storage.Key(mutatingConfigsGR, "", "a"), mutatingConfig("a", url, ca))
	require.NoError(t, err)
	_, err = st.Create(ctx, storage.Key(validatingConfigsGR, "", "a"), validatingConfig("a", url, ca))
	require.NoError(t, err)
	st.failing.Store(true)

	d, err := NewWebhooks(WebhookConfig{Store: st, SyncTimeout: 20 * time.Millisecond, RetryInterval: time.Millisecond})
	require.NoError(t, err)
	check := func(name string, err error) {
		t.Helper()
		require.Error(t, err, name)
		assert.True(t, apierrors.IsForbidden(err), "%s: %v", name, err)
		assert.ErrorIs(t, err, ErrWebhooksNotReady, name)
		assert.Contains(t, err.Error(), `pods "p" is forbidden: not yet ready to handle request`, name)
	}
	check("not running: mutating", d.Mutating().Admit(ctx, podCreate("p")))
	check("not running: validating", d.Validating().Validate(ctx, podCreate("p")))

	stop := startWebhooks(t, d)
	defer stop()
	check("store failing: mutating", d.Mutating().Admit(ctx, podCreate("p")))
	check("store failing: validating", d.Validating().Validate(ctx, podCreate("p")))
	assert.Empty(t, calls.take(), "no webhook skipped silently, none called either")

	// The store recovers: the retried list fills the cache.
	st.failing.Store(false)
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	require.NoError(t, d.WaitForSync(wctx))
	require.NoError(t, d.Mutating().Admit(ctx, podCreate("p")))
	require.NoError(t, d.Validating().Validate(ctx, podCreate("p")))
	assert.Equal(t, []string{"a", "a"}, calls.take())
}

func TestWebhooksFirstWriteWaitsForStart(t *testing.T) {
	// A write racing Run's start waits for its first list instead of
	// being admitted without the stored configuration.
	ctx := context.Background()
	calls := &callLog{}
	url, ca := recordingHook(t, calls, "a")
	st := store(t, map[string]runtime.Object{storage.Key(mutatingConfigsGR, "", "a"): mutatingConfig("a", url, ca)})
	d, err := NewWebhooks(WebhookConfig{Store: st})
	require.NoError(t, err)
	stop := startWebhooks(t, d)
	defer stop()
	require.NoError(t, d.Mutating().Admit(ctx, podCreate("p")))
	assert.Equal(t, []string{"a"}, calls.take())
}

func TestWebhooksRunStopsWithContext(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	d := runWebhooks(t, WebhookConfig{Store: st})
	startWebhooks(t, d)() // a second Run, stopped at once, returns too
}

// ExampleWebhooks_Run runs the webhook configuration cache the way the API
// server does (apiserver.Config.AdmissionWatches): writes are admitted
// once it has read the stored configurations.
func ExampleWebhooks_Run() {
	st := memory.New()
	defer st.Close()
	d, err := NewWebhooks(WebhookConfig{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { stop(); <-done }()

	if err := d.WaitForSync(ctx); err != nil {
		panic(err)
	}
	fmt.Println(d.Mutating().Admit(ctx, podCreate("p")))
	// Output: <nil>
}
