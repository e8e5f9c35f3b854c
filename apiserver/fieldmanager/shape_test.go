package fieldmanager

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
	"sigs.k8s.io/yaml"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/scheme"
)

// createPair records creates through one Manager's fast path and one's
// library path, each kept across the creates of a test, so that the
// fast one remembers shapes as the API server's does.
type createPair struct {
	fast, slow *Manager
}

func newCreatePair(t testing.TB) *createPair {
	t.Helper()
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	fast, err := New(scheme.New(), quiet)
	require.NoError(t, err)
	slow, err := New(scheme.New(), quiet)
	require.NoError(t, err)
	fast.now, slow.now = func() time.Time { return t0 }, func() time.Time { return t0 }
	slow.slowCreate = true
	return &createPair{fast: fast, slow: slow}
}

// create records the create of obj by manager both ways and fails unless
// both give the same object.
func (p *createPair) create(t *testing.T, obj runtime.Object, manager string) runtime.Object {
	t.Helper()
	gvks, _, err := scheme.New().ObjectKinds(obj)
	require.NoError(t, err)
	ctx := context.Background()
	opts := UpdateOptions{FieldManager: manager}
	fast, err := p.fast.Update(ctx, nil, obj.DeepCopyObject(), gvks[0], opts)
	require.NoError(t, err)
	slow, err := p.slow.Update(ctx, nil, obj.DeepCopyObject(), gvks[0], opts)
	require.NoError(t, err)
	requireSameFields(t, fast, slow)
	return fast
}

// shapesStored is how many shapes of gvk the fast Manager has stored: one
// per create whose shape it had not seen among its latest.
func (p *createPair) shapesStored(gvk schema.GroupVersionKind) int {
	return int(p.fast.plan(gvk, "").create.next.Load())
}

// decoded decodes and defaults an object as the REST layer does.
func decoded(t *testing.T, obj runtime.Object, doc string) runtime.Object {
	t.Helper()
	require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj))
	defaults.Default(obj)
	return obj
}

func templatePod(t *testing.T, name, labels, containers string) runtime.Object {
	return decoded(t, &corev1.Pod{}, fmt.Sprintf(`
metadata: {name: %s, namespace: default, labels: {%s}}
spec: {containers: [%s]}
`, name, labels, containers))
}

// TestCreateShapesMatchLibrary records sequences of creates through one
// Manager: shapes that repeat, alternate and change by a list key, a map
// key, a set value or a value. Each create must come out as the library
// writes it, and only shapes not seen among the latest are stored.
func TestCreateShapesMatchLibrary(t *testing.T) {
	eventGVK := corev1.SchemeGroupVersion.WithKind("Event")
	scheduled := func(i int) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-%d.s", i), Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("web-%d", i), UID: "u"},
			Reason:         "Scheduled", Message: "Successfully assigned", Source: corev1.EventSource{Component: "default-scheduler"},
			FirstTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), Type: corev1.EventTypeNormal, Count: 1,
		}
	}
	t.Run("events of two components", func(t *testing.T) {
		p := newCreatePair(t)
		for i := range 6 {
			p.create(t, kubeletEvent(i, "Pulled", fmt.Sprintf("web-%d", i)), "kubelet")
			p.create(t, scheduled(i), "default-scheduler")
			p.create(t, kubeletEvent(i, "Created", fmt.Sprintf("web-%d", i)), "kubelet")
			p.create(t, kubeletEvent(i, "Started", fmt.Sprintf("web-%d", i)), "kubelet")
		}
		assert.Equal(t, 2, p.shapesStored(eventGVK), "one shape per component")
		// One field more is another shape.
		ev := kubeletEvent(9, "Killing", "web-9")
		ev.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, 1, 5000, time.UTC))}
		p.create(t, ev, "kubelet")
		p.create(t, ev, "kubelet")
		assert.Equal(t, 3, p.shapesStored(eventGVK))
	})
	t.Run("pods", func(t *testing.T) {
		p := newCreatePair(t)
		web := `{name: web, image: nginx, ports: [{containerPort: 80}], env: [{name: A, value: "1"}]}`
		steps := []struct {
			name string
			obj  runtime.Object
			new  bool // a shape not among the latest
		}{
			{"first", templatePod(t, "a", "app: web, hash: x1", web), true},
			{"same template", templatePod(t, "b", "app: web, hash: x1", web), false},
			{"other label values", templatePod(t, "c", "app: db, hash: x2", web), false},
			{"labels in another order", templatePod(t, "d", "hash: x1, app: web", web), false},
			{"other label key", templatePod(t, "e", "app: web, tier: x1", web), true},
			{"other container name", templatePod(t, "f", "app: web, hash: x1",
				`{name: api, image: nginx, ports: [{containerPort: 80}], env: [{name: A, value: "1"}]}`), true},
			{"other port", templatePod(t, "g", "app: web, hash: x1",
				`{name: web, image: nginx, ports: [{containerPort: 81}], env: [{name: A, value: "1"}]}`), true},
			{"other protocol", templatePod(t, "h", "app: web, hash: x1",
				`{name: web, image: nginx, ports: [{containerPort: 80, protocol: UDP}], env: [{name: A, value: "1"}]}`), true},
			{"back to the first", templatePod(t, "i", "app: web, hash: x1", web), true}, // evicted by four others
			{"duplicate env", templatePod(t, "j", "app: web, hash: x1",
				`{name: web, image: nginx, ports: [{containerPort: 80}], env: [{name: A, value: "1"}, {name: A}]}`), true},
			{"env without value", templatePod(t, "k", "app: web, hash: x1",
				`{name: web, image: nginx, ports: [{containerPort: 80}], env: [{name: A}]}`), true},
			{"two containers", templatePod(t, "l", "app: web, hash: x1", web+`, {name: side, image: envoy}`), true},
			{"two containers again", templatePod(t, "m", "app: web, hash: x1", web+`, {name: side, image: envoy}`), false},
		}
		stored := 0
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				p.create(t, s.obj, "kube-controller-manager")
				if s.new {
					stored++
				}
				assert.Equal(t, stored, p.shapesStored(podGVK))
			})
		}
	})
	t.Run("sets, big maps and empty sets", func(t *testing.T) {
		p := newCreatePair(t)
		cm := func(name string, keys []string, finalizers ...string) *corev1.ConfigMap {
			c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Data: map[string]string{}}
			for _, k := range keys {
				c.Data[k] = "v-" + k
			}
			return c
		}
		var many []string
		for i := range 40 {
			many = append(many, fmt.Sprintf("key-%02d", 39-i))
		}
		for i, c := range []*corev1.ConfigMap{
			cm("a", many), cm("b", many), cm("c", many[1:]), cm("d", many[:3], "x/y"), cm("e", many[:3], "x/z"),
			cm("f", many[:3], "x/y", "x/z"), cm("g", many[:3], "x/z", "x/y"), cm("h", nil), cm("i", nil),
			cm("j", []string{""}), cm("k", many[:3], "x/y", "x/y"),
		} {
			c.Namespace = "default"
			out := p.create(t, c, "m")
			if i == 7 {
				assert.Empty(t, managedFieldsOf(out), "nothing but stripped fields: no entry")
			}
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
		for range 2 {
			out := p.create(t, ns, "m")
			assert.Empty(t, managedFieldsOf(out))
		}
	})
}

// TestCreateShapesRandomSequences records random sequences of creates of
// every kind of the create table through one Manager: repeats, small
// random changes of a previous object, new random objects.
func TestCreateShapesRandomSequences(t *testing.T) {
	f, rnd := newFiller(t)
	for _, tc := range createTable {
		t.Run(tc.name, func(t *testing.T) {
			p := newCreatePair(t)
			var made []runtime.Object
			for range 30 {
				var obj runtime.Object
				switch n := rnd.Intn(4); {
				case len(made) == 0 || n == 0:
					obj = tc.obj.DeepCopyObject()
					f.Fill(obj)
				case n == 1:
					obj = made[rnd.Intn(len(made))].DeepCopyObject()
				default:
					obj = randomUpdate(rnd, f, made[rnd.Intn(len(made))])
				}
				a, err := meta.Accessor(obj)
				require.NoError(t, err)
				a.SetManagedFields(nil)
				a.SetResourceVersion("")
				made = append(made, obj)
				p.create(t, obj, "fuzz")
			}
			gvks, _, err := scheme.New().ObjectKinds(tc.obj)
			require.NoError(t, err)
			t.Logf("30 creates, %d shapes stored", p.shapesStored(gvks[0]))
		})
	}
}

// recordShape walks a create of obj and returns its shape and the set
// the plain walker builds (before stripping).
func recordShape(t *testing.T, m *Manager, obj runtime.Object) ([]byte, *fieldpath.Set, error) {
	t.Helper()
	gvks, _, err := scheme.New().ObjectKinds(obj)
	require.NoError(t, err)
	p := m.plan(gvks[0], "")
	require.True(t, p.ok)
	w := p.create.createWalker(p.fields, p.reset)
	defer p.create.putWalker(w)
	if err := p.compareCreate(w, obj); err != nil {
		return nil, nil, err
	}
	require.False(t, w.rec.bad)
	plain := newWalker(p.fields, p.reset, false)
	require.NoError(t, p.compareCreate(plain, obj))
	return append([]byte(nil), w.rec.buf...), plain.changed.set, nil
}

// TestShapeDecodesToTheWalkSet: the set decoded from a recorded shape is
// the set the walk builds, and one object always records one shape,
// whatever order its maps are iterated in.
func TestShapeDecodesToTheWalkSet(t *testing.T) {
	m, _ := newManager(t)
	f, _ := newFiller(t)
	for _, tc := range createTable {
		for i := range 10 {
			obj := tc.obj.DeepCopyObject()
			if i == 0 {
				obj = decoded(t, obj, tc.yaml)
			} else {
				f.Fill(obj)
			}
			a, _ := meta.Accessor(obj)
			a.SetManagedFields(nil)
			shape, want, err := recordShape(t, m, obj)
			if err != nil {
				continue // left to the library
			}
			got, err := shapeSet(shape)
			require.NoError(t, err, tc.name)
			require.True(t, want.Equals(got), "%s: decoded %v, walked %v", tc.name, got, want)
			for range 3 {
				again, _, err := recordShape(t, m, obj)
				require.NoError(t, err)
				require.Equal(t, shape, again, tc.name)
			}
		}
	}
}

// TestShapeRejectsWhatItCannotWrite: values of other Go types make the
// shape unusable, and a malformed shape never decodes into a set silently
// differing from a recorded one (it fails or decodes other paths).
func TestShapeRejectsWhatItCannotWrite(t *testing.T) {
	name := "ports"
	keys := value.FieldList{{Name: "port", Value: value.NewValueInterface(80)}} // int, not int64
	var r shapeRecorder
	r.record(fieldpath.Path{{FieldName: &name}, {Key: &keys}})
	assert.True(t, r.bad)

	r.reset()
	keys = value.FieldList{{Name: "port", Value: value.NewValueInterface(int64(80))}, {Name: "protocol", Value: value.NewValueInterface("TCP")}}
	idx, flt, yes := 3, value.NewValueInterface(1.5), value.NewValueInterface(true)
	null := value.NewValueInterface(nil)
	r.record(fieldpath.Path{{FieldName: &name}, {Key: &keys}})
	r.truncate(1) // the walker went back up to .ports
	r.record(fieldpath.Path{{FieldName: &name}, {Index: &idx}, {Value: &flt}, {Value: &yes}, {Value: &null}})
	require.False(t, r.bad)
	want := fieldpath.NewSet(
		fieldpath.Path{{FieldName: &name}, {Key: &keys}},
		fieldpath.Path{{FieldName: &name}, {Index: &idx}, {Value: &flt}, {Value: &yes}, {Value: &null}},
	)
	got, err := shapeSet(r.buf)
	require.NoError(t, err)
	require.True(t, want.Equals(got), "%v", got)

	rnd := rand.New(rand.NewSource(1))
	for i := range len(r.buf) {
		_, _ = shapeSet(r.buf[:i]) // no panic
		bad := append([]byte(nil), r.buf...)
		bad[rnd.Intn(len(bad))] ^= byte(1 + rnd.Intn(255))
		_, _ = shapeSet(bad)
	}
	_, err = shapeSet([]byte{0, 0})
	assert.ErrorIs(t, err, errBadShape)
}

// TestWrapLazyMatchesLibrary: timestamps and quantities give the nodes
// the library's conversion gives, without converting.
func TestWrapLazyMatchesLibrary(t *testing.T) {
	tm := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.FixedZone("X", 3600)))
	mt := metav1.NewMicroTime(tm.Time)
	q := resource.MustParse("1500m")
	qs := resource.MustParse("2Gi")
	_ = qs.String() // cached string
	for _, v := range []any{
		&tm, &metav1.Time{}, &mt, &metav1.MicroTime{}, &q, &qs, &resource.Quantity{},
		ref(&tm), ref[metav1.Time](nil), ref(&mt), ref[metav1.MicroTime](nil), ref(&q), ref[resource.Quantity](nil),
	} {
		rv := reflect.ValueOf(v).Elem()
		t.Run(fmt.Sprintf("%s %v", rv.Type(), rv), func(t *testing.T) {
			e := value.TypeReflectEntryOf(rv.Type())
			require.True(t, e.CanConvertToUnstructured())
			want, err := e.ToUnstructured(rv)
			require.NoError(t, err)
			n, ok := wrapLazy(rv, rv.Type())
			require.True(t, ok)
			if want == nil {
				assert.Equal(t, kNull, n.k)
				return
			}
			require.True(t, n.isScalar())
			assert.Equal(t, cString, n.class())
			assert.Equal(t, want, n.str())
			assert.Equal(t, want, n.scalar().AsString())
		})
	}
	_, ok := wrapLazy(reflect.ValueOf(tm), timeType) // not addressable
	assert.False(t, ok)
	before := q
	n, _ := wrapLazy(reflect.ValueOf(&q).Elem(), quantityType)
	_ = n.str()
	assert.Equal(t, before, q, "formatting leaves the object as it was")
}

func ref[T any](v *T) **T { return &v }

// TestCreateShapesConcurrently records creates of alternating shapes from
// several goroutines through one Manager (its shapes, walkers and item
// elements are shared): each must come out as the library writes it.
func TestCreateShapesConcurrently(t *testing.T) {
	p := newCreatePair(t)
	web := `{name: web, image: nginx, ports: [{containerPort: 80}], env: [{name: A, value: "1"}]}`
	objs := []runtime.Object{
		kubeletEvent(1, "Pulled", "web-1"),
		templatePod(t, "a", "app: web, hash: x1", web),
		templatePod(t, "b", "app: db, tier: x2", web+`, {name: side, image: envoy, resources: {requests: {cpu: 100m, memory: 1Gi}}}`),
		templatePod(t, "c", "app: web", `{name: api, image: nginx, ports: [{containerPort: 81, protocol: UDP}]}`),
		decoded(t, &corev1.ConfigMap{}, `{metadata: {name: cm, namespace: default, labels: {a: b, c: d, e: f}}, data: {x: "1", y: "2"}}`),
	}
	want := make([]runtime.Object, len(objs))
	gvks := make([]schema.GroupVersionKind, len(objs))
	for i, obj := range objs {
		want[i] = p.create(t, obj, "m")
		kinds, _, err := scheme.New().ObjectKinds(obj)
		require.NoError(t, err)
		gvks[i] = kinds[0]
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(objs)
				got, err := p.fast.Update(context.Background(), nil, objs[k].DeepCopyObject(), gvks[k], UpdateOptions{FieldManager: "m"})
				if err == nil && !reflect.DeepEqual(managedFieldsOf(got), managedFieldsOf(want[k])) {
					err = fmt.Errorf("object %d: managedFields %v, want %v", k, managedFieldsOf(got), managedFieldsOf(want[k]))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
