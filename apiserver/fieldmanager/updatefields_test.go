package fieldmanager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/scheme"
)

// The update fast path is checked against the library: a pair of Managers
// on one clock, one recording updates in one walk where it can, the other
// always through apimachinery's field manager, go through the same writes;
// every write must leave the same managedFields, entry for entry and byte
// for byte, and the test states which writes the fast path takes.

// pair is a fast Manager and a library-only one on one clock.
type pair struct {
	fast, slow *Manager
	clk        *testClock
	gvk        schema.GroupVersionKind
}

func newPair(t testing.TB, gvk schema.GroupVersionKind) *pair {
	t.Helper()
	clk := &testClock{t: t0}
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	fast, err := New(scheme.New(), WithClock(clk.now), quiet)
	require.NoError(t, err)
	slow, err := New(scheme.New(), WithClock(clk.now), quiet)
	require.NoError(t, err)
	slow.slowUpdate = true
	return &pair{fast: fast, slow: slow, clk: clk, gvk: gvk}
}

// create records the create of obj (by the fast create path, proven equal
// to the library's) and returns it as stored.
func (p *pair) create(t testing.TB, obj runtime.Object, manager string) runtime.Object {
	t.Helper()
	out, err := p.slow.Update(context.Background(), nil, obj.DeepCopyObject(), p.gvk, UpdateOptions{FieldManager: manager})
	require.NoError(t, err)
	return persisted(t, out, "1")
}

// update records the write of obj over live with both Managers, on
// copies, fails unless both give the same object, and returns it as
// stored, with whether the fast path took the write.
func (p *pair) update(t *testing.T, live, obj runtime.Object, opts UpdateOptions) (runtime.Object, bool) {
	t.Helper()
	covered := p.fast.updateFields(live.DeepCopyObject(), obj.DeepCopyObject(), p.gvk,
		ManagerName(opts.FieldManager, opts.UserAgent), opts.Subresource)
	ctx := context.Background()
	fast, err := p.fast.Update(ctx, live.DeepCopyObject(), obj.DeepCopyObject(), p.gvk, opts)
	require.NoError(t, err)
	slow, err := p.slow.Update(ctx, live.DeepCopyObject(), obj.DeepCopyObject(), p.gvk, opts)
	require.NoError(t, err)
	requireSameFields(t, fast, slow)
	return persisted(t, slow, "2"), covered
}

// apply records a server-side apply with both Managers (both take the
// library's path) and returns the result as stored.
func (p *pair) apply(t *testing.T, live runtime.Object, patch string, opts ApplyOptions) runtime.Object {
	t.Helper()
	ctx := context.Background()
	fast, _, err := p.fast.Apply(ctx, live.DeepCopyObject(), p.gvk, []byte(patch), opts)
	require.NoError(t, err)
	slow, _, err := p.slow.Apply(ctx, live.DeepCopyObject(), p.gvk, []byte(patch), opts)
	require.NoError(t, err)
	requireSameFields(t, fast, slow)
	return persisted(t, slow, "2")
}

// step is one write of a sequence.
type step struct {
	name string
	opts UpdateOptions
	// change builds the request from a copy of the live object; nil
	// sends it back unchanged.
	change func(obj runtime.Object)
	// stored, instead, changes the stored object without tracking, as the
	// binding subresource or a test's corruption does.
	stored func(obj runtime.Object)
	// apply, instead, is a server-side apply patch by opts.FieldManager.
	apply string
	// slow: the fast path leaves this write to the library.
	slow bool
}

// updateCase is an object created by creator, then written by steps.
type updateCase struct {
	name    string
	obj     func() runtime.Object
	creator string
	steps   []step
}

// fromYAML decodes a manifest into a fresh object of obj's type,
// defaulted as the REST layer does.
func fromYAML(obj runtime.Object, manifest string) func() runtime.Object {
	return func() runtime.Object {
		out := obj.DeepCopyObject()
		if err := yaml.UnmarshalStrict([]byte(manifest), out); err != nil {
			panic(err)
		}
		defaults.Default(out)
		return out
	}
}

// as adapts a change of a typed object.
func as[T runtime.Object](f func(T)) func(runtime.Object) {
	return func(obj runtime.Object) { f(obj.(T)) }
}

// run goes through the case with a fresh pair, advancing the clock a
// second per write so that entries get distinct times.
func (c updateCase) run(t *testing.T) {
	obj := c.obj()
	gvks, _, err := scheme.New().ObjectKinds(obj)
	require.NoError(t, err)
	p := newPair(t, gvks[0])
	live := p.create(t, obj, c.creator)
	for i, s := range c.steps {
		p.clk.advance(time.Second)
		switch {
		case s.stored != nil:
			live = live.DeepCopyObject()
			s.stored(live)
		case s.apply != "":
			live = p.apply(t, live, s.apply, ApplyOptions{FieldManager: s.opts.FieldManager, Subresource: s.opts.Subresource, Force: true})
		default:
			obj := live.DeepCopyObject()
			if s.change != nil {
				s.change(obj)
			}
			var covered bool
			live, covered = p.update(t, live, obj, s.opts)
			assert.Equal(t, !s.slow, covered, "step %d (%s): fast path taken", i, s.name)
		}
	}
}

func TestUpdateFieldsMatchesLibrary(t *testing.T) {
	for _, c := range append(podCases(), otherCases()...) {
		t.Run(c.name, c.run)
	}
}

func TestUpdateFieldsFallsBack(t *testing.T) {
	for _, c := range fallbackCases() {
		t.Run(c.name, c.run)
	}
}

// TestUpdateFieldsConcurrent has one Manager record the lives of many pods
// at once — one creator entry shared through the decoded-set cache, each
// pod's own kubelet entry — and checks every result against the library
// (run with -race).
func TestUpdateFieldsConcurrent(t *testing.T) {
	p := newPair(t, podGVK)
	const pods = 8
	var wg sync.WaitGroup
	results := make([][2]runtime.Object, pods*3)
	for i := range pods {
		wg.Go(func() {
			pod := workloadPod().(*corev1.Pod)
			pod.Name = fmt.Sprintf("web-%d", i)
			out, err := p.fast.Update(context.Background(), nil, pod, podGVK, kcm)
			if err != nil {
				panic(err)
			}
			live := out.(*corev1.Pod)
			live.UID = types.UID(fmt.Sprintf("uid-%d", i))
			bind(live)
			for j, ready := range []bool{false, true, true} {
				obj := kubeletStatus(live, ready)
				obj.Status.PodIP = fmt.Sprintf("10.244.1.%d", i)
				obj.Status.PodIPs = []corev1.PodIP{{IP: obj.Status.PodIP}}
				fast, err := p.fast.Update(context.Background(), live, obj.DeepCopy(), podGVK, kubelet)
				if err != nil {
					panic(err)
				}
				slow, err := p.slow.Update(context.Background(), live, obj.DeepCopy(), podGVK, kubelet)
				if err != nil {
					panic(err)
				}
				results[i*3+j] = [2]runtime.Object{fast, slow}
				live = slow.(*corev1.Pod)
			}
		})
	}
	wg.Wait()
	for _, r := range results {
		requireSameFields(t, r[0], r[1])
	}
}
