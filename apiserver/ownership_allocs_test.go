package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

// sharedOnlyStore hides storage.OwningWriter from the handlers: the
// memory store as a store that copies on the way in (CreateShared,
// UpdateShared), which is how every write went before OwningWriter.
type sharedOnlyStore struct {
	storage.Store
	st *memory.Store
}

func (s sharedOnlyStore) CreateShared(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return s.st.CreateShared(ctx, key, obj)
}

func (s sharedOnlyStore) UpdateShared(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	return s.st.UpdateShared(ctx, key, tryUpdate)
}

func (s sharedOnlyStore) GetShared(ctx context.Context, key string) (runtime.Object, error) {
	return s.st.GetShared(ctx, key)
}

var (
	_ storage.SharedWriter = sharedOnlyStore{}
	_ storage.SharedReader = sharedOnlyStore{}
)

// writeAllocs measures the allocations of one pod write through the
// handler, over the memory store (owning) and over the same store without
// OwningWriter. Before measuring it creates enough pods for every run of
// prepare's write (bind and PUT a pod each time).
func writeAllocs(t *testing.T, owning bool, runs int, prepare func(t *testing.T, h http.Handler, n int), write func(h http.Handler, i int) *httpResult) float64 {
	t.Helper()
	mem := memory.New()
	defer mem.Close()
	var st storage.Store = mem
	if !owning {
		st = sharedOnlyStore{Store: mem, st: mem}
	}
	h := newOwnershipServer(t, st, nil).Handler()
	if prepare != nil {
		prepare(t, h, runs+1)
	}
	i := 0
	var failed *httpResult
	allocs := testing.AllocsPerRun(runs, func() {
		if res := write(h, i); res.code != res.want && failed == nil {
			failed = res
		}
		i++
	})
	require.Nil(t, failed, "a measured write failed")
	return allocs
}

// httpResult is a response code against the expected one.
type httpResult struct {
	code, want int
	body       string
}

func (r *httpResult) String() string {
	return fmt.Sprintf("HTTP %d, want %d: %.300s", r.code, r.want, r.body)
}

func result(h http.Handler, method, path, contentType string, body []byte, want int) *httpResult {
	rec := call(h, method, path, contentType, body)
	return &httpResult{code: rec.Code, want: want, body: rec.Body.String()}
}

// TestOwnedWritesSaveCopies counts what the owned write paths save: the
// store's copy on the way in (create, binding, PUT, status PUT) and the
// copy of the current object handed to tryUpdate (binding, PUTs), each
// worth as many allocations as one deep copy of the pod; and a generated
// name costs no copy. Allocation counts, not times, are compared.
func TestOwnedWritesSaveCopies(t *testing.T) {
	const runs = 50
	// One copy of the pod as stored (defaulted, with managedFields).
	mem := memory.New()
	defer mem.Close()
	h := newOwnershipServer(t, mem, nil).Handler()
	mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, ownershipPod("p"), "v1", "Pod"), http.StatusCreated)
	stored := sharedPod(t, mem, "p")
	copyAllocs := testing.AllocsPerRun(runs, func() { _ = stored.DeepCopyObject() })
	require.Greater(t, copyAllocs, 10.0, "the test pod is rich enough for a copy to show")

	bodies := func(n int, build func(i int) []byte) [][]byte {
		out := make([][]byte, n)
		for i := range out {
			out[i] = build(i)
		}
		return out
	}
	createPods := func(t *testing.T, h http.Handler, n int) {
		for i := range n {
			mustCall(t, h, http.MethodPost, podsPath, "application/json", asJSON(t, ownershipPod(fmt.Sprintf("p-%d", i)), "v1", "Pod"), http.StatusCreated)
		}
	}
	named := bodies(runs+1, func(i int) []byte { return asJSON(t, ownershipPod(fmt.Sprintf("p-%d", i)), "v1", "Pod") })
	generated := bodies(runs+1, func(int) []byte {
		p := ownershipPod("")
		p.GenerateName = "p-"
		return asJSON(t, p, "v1", "Pod")
	})
	binding := bodies(runs+1, func(i int) []byte {
		return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p-%d"},"target":{"name":"node-1"}}`, i)
	})
	status := bodies(runs+1, func(i int) []byte {
		p := ownershipPod(fmt.Sprintf("p-%d", i))
		p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.244.0.%d", i%250+1)
		p.Status.QOSClass = corev1.PodQOSGuaranteed
		return asJSON(t, p, "v1", "Pod")
	})
	put := bodies(runs+1, func(i int) []byte {
		p := ownershipPod(fmt.Sprintf("p-%d", i))
		p.Labels["tier"] = "front"
		return asJSON(t, p, "v1", "Pod")
	})
	writes := []struct {
		name    string
		prepare func(t *testing.T, h http.Handler, n int)
		write   func(h http.Handler, i int) *httpResult
		saved   float64 // deep copies the owned path saves
	}{
		{"create", nil, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPost, podsPath, "application/json", named[i], http.StatusCreated)
		}, 1},
		{"binding", createPods, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPost, fmt.Sprintf("%s/p-%d/binding", podsPath, i), "application/json", binding[i], http.StatusCreated)
		}, 2},
		{"status PUT", createPods, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPut, fmt.Sprintf("%s/p-%d/status", podsPath, i), "application/json", status[i], http.StatusOK)
		}, 2},
		{"PUT", createPods, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPut, fmt.Sprintf("%s/p-%d", podsPath, i), "application/json", put[i], http.StatusOK)
		}, 2},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			owned := writeAllocs(t, true, runs, w.prepare, w.write)
			copied := writeAllocs(t, false, runs, w.prepare, w.write)
			t.Logf("allocs/op: owned %.0f, copied %.0f; one pod copy %.0f", owned, copied, copyAllocs)
			// Allow a fifth of a copy per copy for pooled buffers and maps.
			assert.GreaterOrEqual(t, copied-owned, 0.8*w.saved*copyAllocs,
				"the owned path saves %v copies of the pod", w.saved)
		})
	}
	t.Run("generated name", func(t *testing.T) {
		plain := writeAllocs(t, true, runs, nil, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPost, podsPath, "application/json", named[i], http.StatusCreated)
		})
		gen := writeAllocs(t, true, runs, nil, func(h http.Handler, i int) *httpResult {
			return result(h, http.MethodPost, podsPath, "application/json", generated[i], http.StatusCreated)
		})
		t.Logf("allocs/op: named %.0f, generated %.0f; one pod copy %.0f", plain, gen, copyAllocs)
		assert.Less(t, gen-plain, 0.5*copyAllocs, "a generated name costs no copy of the pod")
	})
}
