package fieldmanager

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
	"sigs.k8s.io/yaml"

	"github.com/podkit/podkit/apiserver/defaults"
	"github.com/podkit/podkit/apiserver/scheme"
)

var (
	deployGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	podGVK    = corev1.SchemeGroupVersion.WithKind("Pod")
	cmGVK     = corev1.SchemeGroupVersion.WithKind("ConfigMap")

	// t0 is the test clock's time; later writes use t0 plus whole seconds.
	t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

// testClock is a settable clock.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// newManager returns a Manager with a test clock, built once per test.
func newManager(t testing.TB) (*Manager, *testClock) {
	t.Helper()
	clk := &testClock{t: t0.Add(300 * time.Millisecond)}
	m, err := New(scheme.New(), WithClock(clk.now))
	require.NoError(t, err)
	return m, clk
}

const deployYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels:
    app: web
    tier: frontend
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
`

// persisted mimics the store: the object gets a uid and resourceVersion.
func persisted(t testing.TB, obj runtime.Object, rv string) runtime.Object {
	t.Helper()
	a, err := meta.Accessor(obj)
	require.NoError(t, err)
	if a.GetUID() == "" {
		a.SetUID("0d6a3b7e-5b1f-4f39-9a3c-1f3c2a1d0001")
	}
	a.SetResourceVersion(rv)
	return obj
}

// entry returns obj's managedFields entry of manager, operation and
// subresource, failing the test when there is none.
func entry(t testing.TB, obj runtime.Object, manager string, op metav1.ManagedFieldsOperationType, sub string) metav1.ManagedFieldsEntry {
	t.Helper()
	for _, e := range managedFieldsOf(obj) {
		if e.Manager == manager && e.Operation == op && e.Subresource == sub {
			return e
		}
	}
	require.Failf(t, "no managedFields entry", "manager %q operation %s subresource %q in %v", manager, op, sub, managers(obj))
	return metav1.ManagedFieldsEntry{}
}

// managers lists obj's entries as manager/operation/subresource.
func managers(obj runtime.Object) []string {
	var out []string
	for _, e := range managedFieldsOf(obj) {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	return out
}

// owns reports whether the entry's field set holds path (a dotted list of
// field names, e.g. "spec.replicas").
func owns(t testing.TB, e metav1.ManagedFieldsEntry, path ...interface{}) bool {
	t.Helper()
	set := &fieldpath.Set{}
	require.NoError(t, set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)))
	return set.Has(fieldpath.MakePathOrDie(path...))
}

// keyName is the path element of a list item keyed by name.
func keyName(name string) fieldpath.PathElement {
	return fieldpath.PathElement{Key: &value.FieldList{{Name: "name", Value: value.NewValueInterface(name)}}}
}

// runtimeSchemeWithout returns a scheme with podkit's types only.
func runtimeSchemeWithout() *runtime.Scheme { return scheme.New() }

// newDeployment decodes deployYAML as the REST layer would for a create.
func newDeployment(t testing.TB) runtime.Object {
	t.Helper()
	d := &appsv1.Deployment{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(deployYAML), d))
	d.TypeMeta = metav1.TypeMeta{}
	defaults.Default(d)
	return d
}

// newFiller returns a filler of random API objects (random seed, logged)
// and a source of random numbers from the same seed.
func newFiller(t testing.TB) (*randfill.Filler, *rand.Rand) {
	t.Helper()
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	f := randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(8).
		Funcs(metafuzzer.Funcs(serializer.NewCodecFactory(scheme.New()))...).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<20), resource.DecimalSI)
		},
	)
	return f, rand.New(rand.NewSource(seed))
}
