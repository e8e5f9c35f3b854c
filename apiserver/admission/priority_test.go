package admission

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func priorityClass(name string, value int32, globalDefault bool, policy corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault, PreemptionPolicy: &policy,
	}
}

func TestPriorityAdmit(t *testing.T) {
	noDefault := newFakeStore()
	noDefault.put(t, priorityClassesGR, priorityClass("high", 1000, false, corev1.PreemptNever))
	withDefault := newFakeStore()
	withDefault.put(t, priorityClassesGR,
		priorityClass("high", 1000, false, corev1.PreemptLowerPriority),
		priorityClass("standard", 100, true, corev1.PreemptLowerPriority),
		priorityClass("racing", 50, true, corev1.PreemptNever))

	tests := []struct {
		name       string
		store      *fakeStore
		spec       corev1.PodSpec
		wantClass  string
		wantValue  int32
		wantPolicy corev1.PreemptionPolicy
		code       int32
		message    string
	}{
		{name: "no class, no default", store: noDefault, wantValue: 0, wantPolicy: corev1.PreemptLowerPriority},
		{name: "named class", store: noDefault, spec: corev1.PodSpec{PriorityClassName: "high"},
			wantClass: "high", wantValue: 1000, wantPolicy: corev1.PreemptNever},
		{name: "global default, lowest wins", store: withDefault, wantClass: "racing", wantValue: 50, wantPolicy: corev1.PreemptNever},
		{name: "system class without object", store: noDefault, spec: corev1.PodSpec{PriorityClassName: "system-node-critical"},
			wantClass: "system-node-critical", wantValue: 2000001000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "matching explicit priority", store: noDefault, spec: corev1.PodSpec{Priority: ptrTo(int32(0))},
			wantValue: 0, wantPolicy: corev1.PreemptLowerPriority},
		{
			name: "unknown class", store: noDefault, spec: corev1.PodSpec{PriorityClassName: "vip"},
			code: http.StatusForbidden, message: `pods "web" is forbidden: no PriorityClass with name vip was found`,
		},
		{
			name: "conflicting priority", store: noDefault, spec: corev1.PodSpec{PriorityClassName: "high", Priority: ptrTo(int32(5))},
			code:    http.StatusForbidden,
			message: `pods "web" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`,
		},
		{
			name: "conflicting preemption policy", store: noDefault,
			spec:    corev1.PodSpec{PriorityClassName: "high", PreemptionPolicy: ptrTo(corev1.PreemptLowerPriority)},
			code:    http.StatusForbidden,
			message: `pods "web" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, err := NewPriority(PriorityConfig{PriorityClasses: tt.store})
			require.NoError(t, err)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: tt.spec}
			err = plugin.Admit(context.Background(), createPod("team", p))
			if tt.code != 0 {
				requireStatus(t, err, tt.code, tt.message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantClass, p.Spec.PriorityClassName)
			require.NotNil(t, p.Spec.Priority)
			assert.Equal(t, tt.wantValue, *p.Spec.Priority)
			require.NotNil(t, p.Spec.PreemptionPolicy)
			assert.Equal(t, tt.wantPolicy, *p.Spec.PreemptionPolicy)
		})
	}
}

func TestPriorityUpdateKeepsValues(t *testing.T) {
	plugin, err := NewPriority(PriorityConfig{PriorityClasses: newFakeStore()})
	require.NoError(t, err)
	old := newPod("web")
	old.Spec.Priority = ptrTo(int32(7))
	old.Spec.PreemptionPolicy = ptrTo(corev1.PreemptNever)
	next := newPod("web")
	require.NoError(t, plugin.Admit(context.Background(), attrs(Update, "pods", "team", "web", next, old)))
	assert.Equal(t, int32(7), *next.Spec.Priority)
	assert.Equal(t, corev1.PreemptNever, *next.Spec.PreemptionPolicy)
}

func TestPriorityValidateSingleDefault(t *testing.T) {
	store := newFakeStore()
	store.put(t, priorityClassesGR, priorityClass("standard", 100, true, corev1.PreemptLowerPriority))
	plugin, err := NewPriority(PriorityConfig{PriorityClasses: store})
	require.NoError(t, err)
	pcAttrs := func(op Operation, pc *schedulingv1.PriorityClass) *Attributes {
		return &Attributes{Operation: op, Name: pc.Name, Object: pc,
			Resource: schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}}
	}
	ctx := context.Background()
	requireStatus(t, plugin.Validate(ctx, pcAttrs(Create, priorityClass("other", 5, true, corev1.PreemptNever))), http.StatusForbidden,
		`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass standard is already marked as default. Only one default can exist`)
	assert.NoError(t, plugin.Validate(ctx, pcAttrs(Create, priorityClass("other", 5, false, corev1.PreemptNever))))
	assert.NoError(t, plugin.Validate(ctx, pcAttrs(Update, priorityClass("standard", 101, true, corev1.PreemptNever))))
	assert.Error(t, plugin.Validate(ctx, pcAttrs(Update, priorityClass("other", 5, true, corev1.PreemptNever))))
}

func TestDefaultTolerationSeconds(t *testing.T) {
	plugin, err := NewDefaultTolerationSeconds(DefaultTolerationSecondsConfig{})
	require.NoError(t, err)
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))}
	custom := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(10))}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	noSchedule := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

	tests := []struct {
		name string
		in   []corev1.Toleration
		want []corev1.Toleration
	}{
		{name: "none", want: []corev1.Toleration{notReady, unreachable}},
		{name: "own not-ready kept", in: []corev1.Toleration{custom}, want: []corev1.Toleration{custom, unreachable}},
		{name: "wildcard tolerates both", in: []corev1.Toleration{everything}, want: []corev1.Toleration{everything}},
		{name: "other effect does not count", in: []corev1.Toleration{noSchedule}, want: []corev1.Toleration{noSchedule, notReady, unreachable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPod("web")
			p.Spec.Tolerations = tt.in
			require.NoError(t, plugin.Admit(context.Background(), createPod("team", p)))
			assert.Equal(t, tt.want, p.Spec.Tolerations)
		})
	}

	short, err := NewDefaultTolerationSeconds(DefaultTolerationSecondsConfig{NotReadySeconds: 30, UnreachableSeconds: 60})
	require.NoError(t, err)
	p := newPod("web")
	require.NoError(t, short.Admit(context.Background(), createPod("team", p)))
	assert.Equal(t, int64(30), *p.Spec.Tolerations[0].TolerationSeconds)
	assert.Equal(t, int64(60), *p.Spec.Tolerations[1].TolerationSeconds)

	_, err = NewDefaultTolerationSeconds(DefaultTolerationSecondsConfig{NotReadySeconds: -1})
	assert.Error(t, err)
}
