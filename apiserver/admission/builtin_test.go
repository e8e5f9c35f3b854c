package admission

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// builtinFixture is a namespace as the API server sets it up: the namespace,
// its default service account, plus a limit range and a quota.
func builtinFixture(t *testing.T) (*Builtins, *fakeStore) {
	t.Helper()
	store := newFakeStore()
	store.put(t, namespacesGR, namespace("team", corev1.NamespaceActive))
	store.put(t, serviceAccountsGR, serviceAccount("team", "default"))
	store.put(t, limitRangesGR, limitRange("team", "defaults", corev1.LimitRangeItem{
		Type: corev1.LimitTypeContainer, Default: rl("cpu", "500m", "memory", "256Mi"), Max: rl("cpu", "1"),
	}))
	store.put(t, resourceQuotasGR, quota("compute", rl("pods", "2", "limits.cpu", "1", "requests.memory", "1Gi")))
	b, err := NewBuiltins(BuiltinsConfig{Store: store})
	require.NoError(t, err)
	return b, store
}

func TestBuiltinsPodCreation(t *testing.T) {
	b, store := builtinFixture(t)
	var seen *corev1.Pod
	inspect := AdmitFunc(func(_ context.Context, a *Attributes) error {
		seen = a.Object.(*corev1.Pod).DeepCopy()
		return nil
	})
	chain, err := b.Chain([]Admitter{inspect}, nil)
	require.NoError(t, err)
	ctx := context.Background()

	p := newPod("web", corev1.Container{Name: "web", Image: "nginx"})
	req := createPod("team", p)
	require.NoError(t, chain.Admit(ctx, req))
	require.NoError(t, chain.Validate(ctx, req))

	// What `kubectl get pod web -o yaml` shows from admission.
	s := p.Spec
	assert.Equal(t, corev1.RestartPolicyAlways, s.RestartPolicy)
	assert.Equal(t, corev1.PullAlways, s.Containers[0].ImagePullPolicy)
	assert.Equal(t, "default", s.ServiceAccountName)
	assert.Equal(t, "default", s.DeprecatedServiceAccount)
	assert.Equal(t, int32(0), *s.Priority)
	assert.Equal(t, corev1.PreemptLowerPriority, *s.PreemptionPolicy)
	assert.Len(t, s.Tolerations, 2)
	assertQuantities(t, rl("cpu", "500m", "memory", "256Mi"), s.Containers[0].Resources.Limits)
	assertQuantities(t, rl("cpu", "500m", "memory", "256Mi"), s.Containers[0].Resources.Requests)
	assert.Equal(t, "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web",
		p.Annotations[LimitRangerAnnotation])
	assert.Equal(t, p, seen, "user mutators run after the built-in ones")

	st := store.get(t, resourceQuotasGR, "team", "compute").(*corev1.ResourceQuota).Status
	assertQuantities(t, rl("pods", "1", "limits.cpu", "500m", "requests.memory", "256Mi"), st.Used)

	// A second pod fits; a third would exceed limits.cpu.
	for _, name := range []string{"api", "extra"} {
		req := createPod("team", newPod(name, corev1.Container{Name: "app", Image: "app:1"}))
		require.NoError(t, chain.Admit(ctx, req))
		err = chain.Validate(ctx, req)
		if name == "extra" {
			requireStatus(t, err, http.StatusForbidden,
				`pods "extra" is forbidden: exceeded quota: compute, requested: limits.cpu=500m,pods=1, used: limits.cpu=1,pods=2, limited: limits.cpu=1,pods=2`)
		} else {
			require.NoError(t, err)
		}
	}
}

func TestBuiltinsRejections(t *testing.T) {
	b, store := builtinFixture(t)
	denyAll := ValidateFunc(func(context.Context, *Attributes) error { return errors.New("closed for maintenance") })
	chain, err := b.Chain(nil, []Validator{denyAll})
	require.NoError(t, err)
	ctx := context.Background()

	requireStatus(t, chain.Admit(ctx, createPod("nope", newPod("web", corev1.Container{Name: "web", Image: "nginx"}))),
		http.StatusNotFound, `namespaces "nope" not found`)

	req := createPod("team", newPod("big", ctr("app", rl("cpu", "2"), rl("cpu", "2"))))
	require.NoError(t, chain.Admit(ctx, req))
	requireStatus(t, chain.Validate(ctx, req), http.StatusForbidden,
		`pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`)

	req = createPod("team", newPod("web", corev1.Container{Name: "web", Image: "nginx"}))
	require.NoError(t, chain.Admit(ctx, req))
	requireStatus(t, chain.Validate(ctx, req), http.StatusForbidden,
		`pods "web" is forbidden: admission plugin "validating#3" denied the request: closed for maintenance`)
	assert.Empty(t, store.get(t, resourceQuotasGR, "team", "compute").(*corev1.ResourceQuota).Status.Used,
		"quota runs last and is not charged for rejected objects")

	_, err = NewBuiltins(BuiltinsConfig{})
	assert.Error(t, err)
}

func TestBuiltinsNamespaceCreation(t *testing.T) {
	b, _ := builtinFixture(t)
	chain, err := b.Chain(nil, nil)
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	req := attrs(Create, "namespaces", "", "new", ns, nil)
	require.NoError(t, chain.Admit(context.Background(), req))
	require.NoError(t, chain.Validate(context.Background(), req))
	assert.Equal(t, []corev1.FinalizerName{"kubernetes"}, ns.Spec.Finalizers)
	assert.Equal(t, "new", ns.Labels[corev1.LabelMetadataName])
}
