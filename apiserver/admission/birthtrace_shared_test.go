package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
	"github.com/podkit/podkit/trace"
)

// Tests of the birth trace's store wrapper on the stores' optional fast
// paths (storage.SharedWriter, SharedReader, OwningWriter): it keeps them
// when the wrapped store has them, and stamps "stored" through them exactly
// as through Create.

var (
	btT0  = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	btNow = func() time.Time { return btT0.Add(5 * time.Millisecond) }
)

func btKey(name string) string {
	return storage.Key(schema.GroupResource{Resource: "pods"}, "default", name)
}

// btTracedPod is a pod as the PodBirthTrace plugin leaves it: "admitted".
func btTracedPod(name string) *corev1.Pod {
	tr := &trace.Trace{}
	tr.Add(trace.StepAdmitted, btT0, "")
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
		Annotations: map[string]string{trace.Annotation: trace.Encode(tr), "keep": "me"}}}
}

// btSubset is the memory store seen through only the optional interfaces
// it is given (Go promotes only the embedded interfaces' methods).
func btSubset(m *memory.Store, sw, sr, ow bool) storage.Store {
	type (
		w = storage.SharedWriter
		r = storage.SharedReader
		o = storage.OwningWriter
	)
	switch {
	case sw && sr && ow:
		return m
	case sw && sr:
		return struct {
			storage.Store
			w
			r
		}{m, m, m}
	case sw && ow:
		return struct {
			storage.Store
			w
			o
		}{m, m, m}
	case sr && ow:
		return struct {
			storage.Store
			r
			o
		}{m, m, m}
	case sw:
		return struct {
			storage.Store
			w
		}{m, m}
	case sr:
		return struct {
			storage.Store
			r
		}{m, m}
	case ow:
		return struct {
			storage.Store
			o
		}{m, m}
	}
	return struct{ storage.Store }{m}
}

// btCreates are the ways st can create: Create, and the optional paths it
// implements.
func btCreates(st storage.Store) map[string]func(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	out := map[string]func(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error){"Create": st.Create}
	if sw, ok := st.(storage.SharedWriter); ok {
		out["CreateShared"] = sw.CreateShared
	}
	if ow, ok := st.(storage.OwningWriter); ok {
		out["CreateOwned"] = ow.CreateOwned
	}
	return out
}

func TestBirthTraceStoreClaimsWhatTheStoreHas(t *testing.T) {
	for _, tc := range []struct{ sw, sr, ow bool }{
		{true, true, true}, {true, true, false}, {true, false, true}, {false, true, true},
		{true, false, false}, {false, true, false}, {false, false, true}, {false, false, false},
	} {
		inner := btSubset(memory.New(), tc.sw, tc.sr, tc.ow)
		st := admission.NewBirthTrace(btNow, nil).Store(inner)
		_, sw := st.(storage.SharedWriter)
		_, sr := st.(storage.SharedReader)
		_, ow := st.(storage.OwningWriter)
		assert.Equal(t, tc, struct{ sw, sr, ow bool }{sw, sr, ow}, "wrapping %T", inner)

		// Every create path the wrapper offers stamps like Create.
		ctx := context.Background()
		want, err := st.Create(ctx, btKey("via-create"), btTracedPod("via-create"))
		require.NoError(t, err)
		for name, create := range btCreates(st) {
			key := btKey("via-" + name + "-x")
			out, err := create(ctx, key, btTracedPod("via-"+name+"-x"))
			require.NoError(t, err, name)
			assert.Equal(t, want.(*corev1.Pod).Annotations, out.(*corev1.Pod).Annotations, "%s over %+v", name, tc)
		}
	}
}

func TestBirthTraceStoreSharedPathsStampLikeCreate(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	st := admission.NewBirthTrace(btNow, mem).Store(mem)
	creates := btCreates(st)
	require.Len(t, creates, 3, "the memory store's fast paths are kept")

	wantTrace := &trace.Trace{}
	wantTrace.Add(trace.StepAdmitted, btT0, "")
	wantTrace.Add(trace.StepStored, btNow(), "")
	want := map[string]string{trace.Annotation: trace.Encode(wantTrace), "keep": "me"}

	for name, create := range creates {
		t.Run(name, func(t *testing.T) {
			// The pod shares its annotation map with template: the stamp
			// must replace the map, not write to it.
			template := btTracedPod("p-" + name)
			before := maps.Clone(template.Annotations)
			pod := template.DeepCopy()
			pod.Annotations = template.Annotations
			out, err := create(ctx, btKey(pod.Name), pod)
			require.NoError(t, err)
			assert.Equal(t, before, template.Annotations, "the caller's map is not written")
			assert.Equal(t, want, out.(*corev1.Pod).Annotations)
			assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored}, btSteps(t, out.(*corev1.Pod).Annotations))
			stored, err := mem.GetShared(ctx, btKey(pod.Name))
			require.NoError(t, err)
			assert.Equal(t, want, stored.(*corev1.Pod).Annotations)

			// Untraced pods and other objects pass as they are.
			plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "plain-" + name}}
			out, err = create(ctx, btKey(plain.Name), plain)
			require.NoError(t, err)
			assert.Nil(t, out.(*corev1.Pod).Annotations)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
				Annotations: map[string]string{trace.Annotation: template.Annotations[trace.Annotation]}}}
			out, err = create(ctx, storage.Key(schema.GroupResource{Resource: "configmaps"}, "default", name), cm)
			require.NoError(t, err)
			assert.Equal(t, []string{trace.StepAdmitted}, btSteps(t, out.(*corev1.ConfigMap).Annotations))
		})
	}
}

func TestBirthTraceStoreUpdatesAndReadsPassThrough(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	st := admission.NewBirthTrace(btNow, mem).Store(mem)
	sw := st.(storage.SharedWriter)
	ow := st.(storage.OwningWriter)
	sr := st.(storage.SharedReader)

	// tryUpdate follows OwningWriter's rules: it never writes cur.
	schedule := func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod).DeepCopy()
		p.Annotations = trace.WithStep(p.Annotations, trace.StepScheduled, btT0.Add(time.Second), "n1")
		return p, nil
	}
	updates := map[string]func(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error){
		"Update": st.Update, "UpdateShared": sw.UpdateShared, "UpdateOwned": ow.UpdateOwned,
	}
	var want map[string]string
	for _, name := range []string{"Update", "UpdateShared", "UpdateOwned"} {
		key := btKey("u-" + name)
		_, err := st.Create(ctx, key, btTracedPod("u-"+name))
		require.NoError(t, err)
		out, err := updates[name](ctx, key, schedule)
		require.NoError(t, err, name)
		got := out.(*corev1.Pod).Annotations
		assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored, trace.StepScheduled}, btSteps(t, got), name)
		if want == nil {
			want = got
		}
		assert.Equal(t, want, got, "%s records the trace as Update does", name)
	}

	// UpdateOwned reaches the store untouched: cur is the stored object.
	key := btKey("u-UpdateOwned")
	stored, err := mem.GetShared(ctx, key)
	require.NoError(t, err)
	var cur runtime.Object
	out, err := ow.UpdateOwned(ctx, key, func(c runtime.Object) (runtime.Object, error) { cur = c; return c, nil })
	require.NoError(t, err)
	assert.Same(t, stored, cur)
	assert.Same(t, stored, out, "returning cur writes nothing")

	got, err := sr.GetShared(ctx, key)
	require.NoError(t, err)
	assert.Same(t, stored, got)
}

// btCountingStore is the memory store counting which write paths the API
// server takes.
type btCountingStore struct {
	*memory.Store
	create, createOwned, update, updateOwned atomic.Int64
}

func (s *btCountingStore) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	s.create.Add(1)
	return s.Store.Create(ctx, key, obj)
}

func (s *btCountingStore) CreateOwned(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	s.createOwned.Add(1)
	return s.Store.CreateOwned(ctx, key, obj)
}

func (s *btCountingStore) Update(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	s.update.Add(1)
	return s.Store.Update(ctx, key, tryUpdate)
}

func (s *btCountingStore) UpdateOwned(ctx context.Context, key string, tryUpdate func(cur runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	s.updateOwned.Add(1)
	return s.Store.UpdateOwned(ctx, key, tryUpdate)
}

func TestBirthTraceAPIServerKeepsOwningPath(t *testing.T) {
	ctx := context.Background()
	inner := &btCountingStore{Store: memory.New()}
	chain, st, err := admission.InstallBirthTrace(admission.NewBirthTrace(btNow, inner), nil, inner)
	require.NoError(t, err)
	srv, err := apiserver.New(apiserver.Config{Store: st, Admission: chain, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, srv.Bootstrap(ctx))
	creates, updates := inner.create.Load(), inner.update.Load()

	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	body, err := json.Marshal(pod)
	require.NoError(t, err)
	rec := btCall(srv.Handler(), http.MethodPost, "/api/v1/namespaces/default/pods", "application/json", body)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, []string{trace.StepAdmitted, trace.StepStored}, btSteps(t, got.Annotations))
	assert.Equal(t, int64(1), inner.createOwned.Load(), "the pod is created through CreateOwned")
	assert.Equal(t, creates, inner.create.Load(), "not through the copying Create")

	rec = btCall(srv.Handler(), http.MethodPatch, "/api/v1/namespaces/default/pods/web",
		"application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"web"}}}`))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Positive(t, inner.updateOwned.Load(), "the pod is updated through UpdateOwned")
	assert.Equal(t, updates, inner.update.Load(), "not through the copying Update")
	stored, err := inner.GetShared(ctx, btKey("web"))
	require.NoError(t, err)
	assert.Equal(t, got.Annotations, stored.(*corev1.Pod).Annotations, "the update keeps the trace as stored")
}

func btCall(h http.Handler, method, path, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func btSteps(t *testing.T, annotations map[string]string) []string {
	t.Helper()
	tr, ok := trace.FromAnnotations(annotations)
	require.True(t, ok, "a birth trace in %v", annotations)
	var out []string
	for _, s := range tr.Steps {
		out = append(out, s.Name)
	}
	return out
}
