package admission

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/podkit/podkit/apiserver/auth"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/trace"
)

// sharedReadBase is what every case's store holds: namespaces (one
// terminating), service accounts, an undefaulted limit range, priority
// classes (one the global default), a pod quota and two stored pods, one
// with a birth trace, bound to node-a.
func sharedReadBase(t *testing.T, s *fakeStore) {
	t.Helper()
	team := namespace("team", corev1.NamespaceActive)
	team.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}
	s.put(t, namespacesGR, team, namespace("dying", corev1.NamespaceTerminating))
	s.put(t, serviceAccountsGR,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: DefaultServiceAccount},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}, AutomountServiceAccountToken: ptrTo(false)},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "dying", Name: DefaultServiceAccount}})
	s.put(t, limitRangesGR, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "limits"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: rl("cpu", "2"), Default: rl("memory", "128Mi")}}}})
	s.put(t, priorityClassesGR,
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10, GlobalDefault: true},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: ptrTo(corev1.PreemptNever)})
	s.put(t, resourceQuotasGR, quota("pods", rl("pods", "3", "requests.memory", "1Gi")))
	a := storedPod("a", corev1.PodRunning, ctr("app", rl("memory", "256Mi"), nil))
	a.Spec.NodeName, a.UID = "node-a", "uid-a"
	a.Annotations = map[string]string{trace.Annotation: `{"t0":"2026-01-01T00:00:00Z","s":[["admitted",1],["stored",2]]}`}
	b := storedPod("b", corev1.PodPending, ctr("app", rl("memory", "256Mi"), nil))
	b.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}}
	s.put(t, podsGR, a, b)
}

// sharedReadPlugins builds the plugins a case runs over st.
type sharedReadPlugins func(t *testing.T, st QuotaStore) ([]Admitter, []Validator)

func builtinPlugins(t *testing.T, st QuotaStore) ([]Admitter, []Validator) {
	t.Helper()
	b, err := NewBuiltins(BuiltinsConfig{Store: st, Clock: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
	require.NoError(t, err)
	return b.Mutators(), b.Validators()
}

// sharedReadOutcome is what a case produced over one store.
type sharedReadOutcome struct {
	err      string
	object   runtime.Object // the request's object
	admitted runtime.Object // a copy of it right after admission
	warnings []string
	stored   map[string]runtime.Object // copies of the objects stored after admission
}

// TestPluginsReadShared: every built-in plugin that reads storage decides
// and mutates exactly as before whether the store shares its objects
// (storage.SharedReader, read-only lists) or copies them; over a sharing
// store it reads nothing through a copying call; and neither admission nor
// later changes to the admitted object modify a stored object.
func TestPluginsReadShared(t *testing.T) {
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	nodeA := &auth.DefaultUser{Name: "system:node:node-a", Groups: []string{"system:nodes"}}
	podSecurity := func(t *testing.T, st QuotaStore) ([]Admitter, []Validator) {
		p, err := NewPodSecurity(PodSecurityConfig{Store: st})
		require.NoError(t, err)
		return nil, []Validator{p}
	}
	nodeRestriction := func(t *testing.T, st QuotaStore) ([]Admitter, []Validator) {
		p, err := NewNodeRestriction(NodeRestrictionConfig{Pods: st})
		require.NoError(t, err)
		return nil, []Validator{p}
	}
	birthTrace := func(t *testing.T, st QuotaStore) ([]Admitter, []Validator) {
		return []Admitter{NewBirthTrace(steppingClock(), st)}, nil
	}
	tokenFor := func(pod, uid string) *Attributes {
		return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Subresource: "token",
			Namespace: "team", Name: DefaultServiceAccount, User: nodeA,
			Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod, UID: k8stypes.UID(uid)}}}}
	}
	tests := []struct {
		name    string
		plugins sharedReadPlugins
		extra   func(t *testing.T, s *fakeStore)
		attrs   func() *Attributes
		err     string                                    // "" admitted
		check   func(t *testing.T, out sharedReadOutcome) // more about the outcome, optional
	}{
		{name: "pod admitted: account, pull secrets, limit defaults, default priority, quota",
			plugins: builtinPlugins,
			attrs:   func() *Attributes { return createPod("team", newPod("web", ctr("app", nil, nil))) },
			check: func(t *testing.T, out sharedReadOutcome) {
				pod := out.admitted.(*corev1.Pod)
				assert.Equal(t, DefaultServiceAccount, pod.Spec.ServiceAccountName)
				assert.Equal(t, []corev1.LocalObjectReference{{Name: "regcred"}}, pod.Spec.ImagePullSecrets)
				assert.Equal(t, "low", pod.Spec.PriorityClassName)
				assert.Equal(t, ptrTo(int32(10)), pod.Spec.Priority)
				assertQuantities(t, rl("cpu", "2", "memory", "128Mi"), pod.Spec.Containers[0].Resources.Limits)
				assertQuantities(t, rl("cpu", "2", "memory", "128Mi"), pod.Spec.Containers[0].Resources.Requests)
				rq := out.stored[storage.Key(resourceQuotasGR, "team", "pods")].(*corev1.ResourceQuota)
				assertQuantities(t, rl("pods", "3", "requests.memory", "640Mi"), rq.Status.Used)
			}},
		{name: "pod naming a priority class and an account",
			plugins: builtinPlugins,
			extra: func(t *testing.T, s *fakeStore) {
				s.put(t, serviceAccountsGR, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "builder"}})
			},
			attrs: func() *Attributes {
				p := newPod("web", ctr("app", rl("memory", "64Mi"), rl("cpu", "1")))
				p.Spec.PriorityClassName, p.Spec.ServiceAccountName = "high", "builder"
				return createPod("team", p)
			}},
		{name: "pod over quota", plugins: builtinPlugins,
			extra: func(t *testing.T, s *fakeStore) {
				s.put(t, podsGR, storedPod("c", corev1.PodRunning, ctr("app", rl("memory", "256Mi"), nil)))
			},
			attrs: func() *Attributes { return createPod("team", newPod("web", ctr("app", nil, nil))) },
			err:   `pods "web" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=3, limited: pods=3`},
		{name: "pod over the limit range", plugins: builtinPlugins,
			attrs: func() *Attributes { return createPod("team", newPod("web", ctr("app", nil, rl("cpu", "4")))) },
			err:   `pods "web" is forbidden: maximum cpu usage per Container is 2, but limit is 4`},
		{name: "pod in a terminating namespace", plugins: builtinPlugins,
			attrs: func() *Attributes { return createPod("dying", newPod("web", ctr("app", nil, nil))) },
			err:   `pods "web" is forbidden: unable to create new content in namespace dying because it is being terminated`},
		{name: "pod in a missing namespace", plugins: builtinPlugins,
			attrs: func() *Attributes { return createPod("nowhere", newPod("web", ctr("app", nil, nil))) },
			err:   `namespaces "nowhere" not found`},
		{name: "pod with a missing account", plugins: builtinPlugins,
			attrs: func() *Attributes {
				p := newPod("web", ctr("app", nil, nil))
				p.Spec.ServiceAccountName = "ghost"
				return createPod("team", p)
			},
			err: `pods "web" is forbidden: error looking up service account team/ghost: serviceaccount "ghost" not found`},
		{name: "pod with a missing priority class", plugins: builtinPlugins,
			attrs: func() *Attributes {
				p := newPod("web", ctr("app", nil, nil))
				p.Spec.PriorityClassName = "ghost"
				return createPod("team", p)
			},
			err: `pods "web" is forbidden: no PriorityClass with name ghost was found`},
		{name: "second global default priority class", plugins: builtinPlugins,
			attrs: func() *Attributes {
				pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 5, GlobalDefault: true}
				return &Attributes{Operation: Create, Resource: schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"), Name: "other", Object: pc}
			},
			err: `priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass low is already marked as default. Only one default can exist`},
		{name: "event in a terminating namespace", plugins: builtinPlugins,
			attrs: func() *Attributes {
				return attrs(Create, "events", "dying", "e", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "dying", Name: "e"}}, nil)
			},
			err: `events "e" is forbidden: unable to create new content in namespace dying because it is being terminated`},
		{name: "privileged pod in a baseline namespace", plugins: podSecurity,
			attrs: func() *Attributes {
				p := newPod("web", ctr("app", nil, nil))
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptrTo(true)}
				return createPod("team", p)
			},
			err: `pods "web" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)`},
		{name: "namespace raised to restricted warns about stored pods", plugins: podSecurity,
			attrs: func() *Attributes {
				old := namespace("team", corev1.NamespaceActive)
				ns := old.DeepCopy()
				ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
				return attrs(Update, "namespaces", "", "team", ns, old)
			},
			check: func(t *testing.T, out sharedReadOutcome) {
				assert.NotEmpty(t, out.warnings, "the stored pods violate restricted")
			}},
		{name: "node token for its own pod", plugins: nodeRestriction,
			attrs: func() *Attributes { return tokenFor("a", "uid-a") }},
		{name: "node token for a pod on another node", plugins: nodeRestriction,
			attrs: func() *Attributes { return tokenFor("b", "") },
			err:   `serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node`},
		{name: "binding without a trace takes the stored pod's", plugins: birthTrace,
			attrs: func() *Attributes {
				return &Attributes{Operation: Create, Resource: pods, Subresource: "binding", Namespace: "team", Name: "a",
					Object: &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team"}}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var outcomes []sharedReadOutcome
			for _, shared := range []bool{false, true} {
				fake := newFakeStore()
				sharedReadBase(t, fake)
				if tt.extra != nil {
					tt.extra(t, fake)
				}
				var st QuotaStore = fake
				ss := &sharedStore{fakeStore: fake}
				if shared {
					st = ss
				}
				muts, vals := tt.plugins(t, st)
				guard := guardStored(fake)
				out := runSharedRead(t, muts, vals, tt.attrs())
				out.stored = storedCopies(fake)
				outcomes = append(outcomes, out)
				guard.assertUnchanged(t)
				if out.object != nil {
					scribble(reflect.ValueOf(out.object))
					guard.assertUnchanged(t)
				}
				if shared {
					assert.Zero(t, ss.copiedGets.Load(), "gets through a copying call")
					assert.Zero(t, ss.copiedLists.Load(), "lists through a copying call")
					assert.Positive(t, ss.sharedGets.Load()+ss.readOnlyLists.Load(), "the case reads storage")
				}
			}
			plain, shared := outcomes[0], outcomes[1]
			if tt.err == "" {
				assert.Empty(t, plain.err)
			} else {
				assert.Contains(t, plain.err, tt.err)
			}
			assert.Equal(t, plain.err, shared.err)
			assert.Equal(t, plain.admitted, shared.admitted, "the admitted object")
			assert.Equal(t, plain.warnings, shared.warnings)
			assert.Equal(t, plain.stored, shared.stored, "what the plugins wrote")
			if tt.check != nil {
				tt.check(t, shared)
			}
		})
	}
}

// runSharedRead admits a as a chain would (mutators, then validators) and
// returns the outcome; the admitted object is a deep copy, compared before
// scribbling over the original.
func runSharedRead(t *testing.T, muts []Admitter, vals []Validator, a *Attributes) sharedReadOutcome {
	t.Helper()
	var out sharedReadOutcome
	ctx := WithRecorder(context.Background(), RecorderFuncs{Warning: func(m string) { out.warnings = append(out.warnings, m) }})
	var err error
	for _, m := range muts {
		if h, ok := m.(Handler); ok && !h.Handles(a.Operation) {
			continue
		}
		if err = m.Admit(ctx, a); err != nil {
			break
		}
	}
	for _, v := range vals {
		if err != nil {
			break
		}
		if h, ok := v.(Handler); ok && !h.Handles(a.Operation) {
			continue
		}
		err = v.Validate(ctx, a)
	}
	if err != nil {
		out.err = err.Error()
	}
	out.object = a.Object
	if a.Object != nil {
		out.admitted = a.Object.DeepCopyObject()
	}
	return out
}
